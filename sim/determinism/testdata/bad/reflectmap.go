package bad

import "reflect"

func ReflectKeys(v reflect.Value) int {
	n := len(v.MapKeys()) // want "MapKeys"
	it := v.MapRange()    // want "MapRange"
	for it.Next() {
		n++
	}
	return n
}
