package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Load reads and parses the YAML file at path (see Parse). It does not validate: call Compile.
//
//determinism:production the daemon's and the CLI's way in; roles are given parsed configurations
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(b)
}

// Parse decodes a YAML configuration strictly and fills in defaults, once CheckInput has found
// it small and shallow enough to parse. Broken YAML comes back as
// Errors with the line; every unknown key comes back as its own FieldError with path and line.
// Parse does not validate: call Compile (or Validate) on the result.
func Parse(b []byte) (*Config, error) {
	if err := CheckInput(b); err != nil {
		return nil, err
	}
	file, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil, Errors{yamlError(err, nil)}
	}
	lines := map[string]int{}
	var unknown []FieldError
	for _, doc := range file.Docs {
		walkKeys(doc.Body, reflect.TypeFor[Config](), "", lines, &unknown)
	}
	if len(file.Docs) > 1 {
		return nil, Errors{{Message: "a configuration is one YAML document, found " + fmt.Sprint(len(file.Docs))}}
	}
	if len(unknown) > 0 {
		return nil, Errors(unknown)
	}
	cfg := &Config{}
	if err := yaml.UnmarshalWithOptions(b, cfg, yaml.Strict()); err != nil {
		return nil, Errors{yamlError(err, lines)}
	}
	cfg.lines = lines
	ApplyDefaults(cfg)
	return cfg, nil
}

// IsEmptyDocument reports whether b holds no configuration at all: nothing, only comments, or a
// null document. ("{}" is not empty: it is a configuration with nothing in it.)
// Input over the limits (CheckInput) is not empty: Parse reports it.
func IsEmptyDocument(b []byte) bool {
	if CheckInput(b) != nil {
		return false
	}
	file, err := parser.ParseBytes(b, 0)
	if err != nil {
		return false
	}
	for _, doc := range file.Docs {
		if unwrap(doc.Body) != nil {
			return false
		}
	}
	return true
}

// yamlError turns a go-yaml error into a FieldError with the line, and the path when a key on
// that line is known.
func yamlError(err error, lines map[string]int) FieldError {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return FieldError{Message: "invalid YAML: " + err.Error()}
	}
	line := ye.GetToken().Position.Line
	return FieldError{Path: pathAtLine(lines, line), Message: ye.GetMessage(), Line: line}
}

// pathAtLine is the deepest recorded path that starts on line (or "").
func pathAtLine(lines map[string]int, line int) string {
	best := ""
	for _, p := range sortedKeys(lines) {
		if lines[p] == line && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// namedList marks NamedList so the key walker can see through it.
type namedList interface{ namedListElem() reflect.Type }

func (NamedList[T]) namedListElem() reflect.Type { return reflect.TypeFor[T]() }

// walkKeys checks every mapping key in node against the YAML tags of t, reporting each unknown
// key, and records the line of every path it passes. Values of the wrong kind are left to the
// decoder, which reports them with their line.
func walkKeys(node ast.Node, t reflect.Type, path string, lines map[string]int, errs *[]FieldError) {
	node = unwrap(node)
	if node == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(reflect.TypeFor[namedList]()) {
		elem := reflect.Zero(t).Interface().(namedList).namedListElem()
		walkNamedList(node, elem, path, lines, errs)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := node.(*ast.MappingNode)
		if !ok {
			return
		}
		fields := yamlFields(t)
		for _, mv := range m.Values {
			k, ok := mappingKey(mv)
			if !ok {
				continue
			}
			p := joinPath(path, k)
			lines[p] = mv.Key.GetToken().Position.Line
			ft, known := fields[k]
			if !known {
				*errs = append(*errs, FieldError{Path: p, Message: "unknown field" + suggest(k, fields), Line: lines[p]})
				continue
			}
			walkKeys(mv.Value, ft, p, lines, errs)
		}
	case reflect.Map:
		m, ok := node.(*ast.MappingNode)
		if !ok {
			return
		}
		for _, mv := range m.Values {
			if k, ok := mappingKey(mv); ok {
				p := key(path, k)
				lines[p] = mv.Key.GetToken().Position.Line
				walkKeys(mv.Value, t.Elem(), p, lines, errs)
			}
		}
	case reflect.Slice:
		if s, ok := node.(*ast.SequenceNode); ok {
			for i, v := range s.Values {
				p := index(path, i)
				lines[p] = v.GetToken().Position.Line
				walkKeys(v, t.Elem(), p, lines, errs)
			}
		}
	}
}

func walkNamedList(node ast.Node, elem reflect.Type, path string, lines map[string]int, errs *[]FieldError) {
	switch n := node.(type) {
	case *ast.SequenceNode:
		for i, v := range n.Values {
			p := index(path, i)
			lines[p] = v.GetToken().Position.Line
			walkKeys(v, elem, p, lines, errs)
		}
	case *ast.MappingNode:
		for i, mv := range n.Values {
			p := index(path, i)
			lines[p] = mv.Key.GetToken().Position.Line
			walkKeys(mv.Value, elem, p, lines, errs)
		}
	}
}

func unwrap(node ast.Node) ast.Node {
	for {
		switch n := node.(type) {
		case *ast.AnchorNode:
			node = n.Value
		case *ast.TagNode:
			node = n.Value
		case *ast.AliasNode, *ast.NullNode, nil:
			return nil // an alias was checked where its anchor stands
		default:
			return node
		}
	}
}

// mappingKey is the key of mv as a string; merge keys ("<<") and complex keys are skipped.
func mappingKey(mv *ast.MappingValueNode) (string, bool) {
	if mv.Key == nil || mv.Key.Type() == ast.MergeKeyType {
		return "", false
	}
	k, ok := mv.Key.(ast.ScalarNode)
	if !ok {
		return "", false
	}
	return fmt.Sprint(k.GetValue()), true
}

// yamlFields maps each YAML key of struct type t to its field's type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// suggest returns ` (did you mean "x"?)` when a known key differs from k only in case.
func suggest(k string, fields map[string]reflect.Type) string {
	for _, name := range sortedKeys(fields) {
		if strings.EqualFold(name, k) {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return ""
}

// UnmarshalYAML decodes a NamedList from a YAML list of items, or from a map of name to item.
func (l *NamedList[T]) UnmarshalYAML(ctx context.Context, node ast.Node) error {
	node = unwrap(node)
	switch n := node.(type) {
	case nil:
		*l = nil
		return nil
	case *ast.SequenceNode:
		var items []T
		if err := yaml.NodeToValue(n, &items, yaml.Strict()); err != nil {
			return err
		}
		*l = items
		return nil
	case *ast.MappingNode:
		return l.decodeMap(n)
	default:
		return &yaml.UnexpectedNodeTypeError{Actual: n.Type(), Expected: ast.SequenceType, Token: n.GetToken()}
	}
}

func (l *NamedList[T]) decodeMap(m *ast.MappingNode) error {
	items := make([]T, 0, len(m.Values))
	for _, mv := range m.Values {
		name, ok := mappingKey(mv)
		if !ok {
			return &yaml.SyntaxError{Message: "expected a name as key", Token: mv.Key.GetToken()}
		}
		var item T
		if v := unwrap(mv.Value); v != nil {
			if err := yaml.NodeToValue(v, &item, yaml.Strict()); err != nil {
				return err
			}
		}
		n, ok := any(&item).(interface{ nameField() *string })
		if !ok {
			panic(fmt.Sprintf("config: NamedList element %T has no name field", item))
		}
		switch got := n.nameField(); {
		case *got == "":
			*got = name
		case *got != name:
			return &yaml.SyntaxError{Message: fmt.Sprintf("name %q differs from its key %q", *got, name), Token: mv.Key.GetToken()}
		}
		items = append(items, item)
	}
	*l = items
	return nil
}

func (c *Cluster) nameField() *string      { return &c.Name }
func (g *ClusterGroup) nameField() *string { return &g.Name }
