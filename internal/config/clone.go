package config

import (
	"fmt"
	"reflect"
)

// Clone returns a deep copy of cfg, secrets included (a JSON or YAML round trip would redact
// them). Stores use it so that no caller shares maps or slices with what they hold.
func Clone(cfg *Config) *Config {
	if cfg == nil {
		return nil
	}
	out := reflect.New(reflect.TypeFor[Config]())
	deepCopy(out.Elem(), reflect.ValueOf(cfg).Elem())
	c := out.Interface().(*Config)
	c.lines = cfg.lines
	return c
}

// deepCopy copies src into dst (both of src's type), allocating new pointers, slices and maps.
// Unexported fields are left zero, except Config's line table, which is shared (it is never
// written after Parse).
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for _, k := range src.MapKeys() { //determinism:ok copying every entry: the order cannot matter
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, src.MapIndex(k))
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Float64:
		dst.Set(src)
	default:
		panic(fmt.Sprintf("config: Clone does not know kind %s (%s)", src.Kind(), src.Type()))
	}
}
