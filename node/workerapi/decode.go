package workerapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// FieldError is a bad request body: Field names what was wrong (a JSON path such as
// "health.state", or "" for the body as a whole).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// DecodeRegister strictly decodes and validates a registration body.
func DecodeRegister(data []byte) (RegisterRequest, error) {
	var req RegisterRequest
	if err := decodeStrict(data, &req); err != nil {
		return RegisterRequest{}, err
	}
	if err := req.Validate(); err != nil {
		return RegisterRequest{}, err
	}
	return req, nil
}

// DecodeHeartbeat strictly decodes and validates a heartbeat body.
// A body in the canonical form (EncodeHeartbeat's, codec.go) is read without reflection.
func DecodeHeartbeat(data []byte) (Heartbeat, error) {
	hb, ok := decodeCanonical(data)
	if !ok {
		if err := decodeStrict(data, &hb); err != nil {
			return Heartbeat{}, err
		}
	}
	if err := hb.Validate(); err != nil {
		return Heartbeat{}, err
	}
	return hb, nil
}

// decodeStrict decodes one JSON object into v, rejecting unknown fields, wrong types and
// trailing data with a *FieldError.
func decodeStrict(data []byte, v any) error {
	if len(data) > BodyBytesMax {
		return fieldErr("", "body larger than %d bytes", BodyBytesMax)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fieldErr("", "empty body: expected a JSON object")
	}
	if first := bytes.TrimSpace(data)[0]; first != '{' {
		return fieldErr("", "body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fe := jsonFieldError(err)
		if fe.Field == "" {
			// Errors from a field's own UnmarshalJSON (time.Time) carry no path: find it.
			fe.Field = locateBadField(data, reflect.TypeOf(v).Elem(), "")
		}
		return fe
	}
	if _, err := dec.Token(); err != io.EOF {
		return fieldErr("", "trailing data after the JSON object")
	}
	// encoding/json matches keys case-insensitively; the wire format does not.
	if fe := ExactKeys(data, v); fe != nil {
		return fe
	}
	if fe := CheckBody(data); fe != nil {
		return fe
	}
	return nil
}

// ExactKeys reports, as a *FieldError naming it, the first key of data (one JSON value that
// decoded into v, a pointer) that names a field only in another letter case, which
// encoding/json takes and the wire format does not; nil when there is none.
func ExactKeys(data []byte, v any) *FieldError {
	if path := inexactKey(data, reflect.TypeOf(v).Elem()); path != "" {
		return fieldErr(path, "unknown field (keys are case-sensitive)")
	}
	return nil
}

// inexactKey returns the path of the first object key that names a struct field of t only
// case-insensitively, or "". data is one JSON value that encoding/json decoded into t with
// unknown fields refused, so every key names a field in some case.
func inexactKey(data []byte, t reflect.Type) string {
	if keysNameFields(data, t) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	path, _ := walkKeys(dec, t, "")
	return path
}

// walkKeys reads one value from dec, descending along t, and returns the path of the first key
// that is not, letter for letter, the JSON name of a field of t.
func walkKeys(dec *json.Decoder, t reflect.Type, prefix string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch tok {
	case json.Delim('['):
		for dec.More() {
			if p, err := walkKeys(dec, elemType(t), prefix); p != "" || err != nil {
				return p, err
			}
		}
	case json.Delim('{'):
		fields := fieldsByTag(t)
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", err
			}
			key, _ := k.(string)
			path := key
			if prefix != "" {
				path = prefix + "." + key
			}
			ft := elemType(t) // a map's values, or nothing to check (interface)
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					return path, nil
				}
			}
			if p, err := walkKeys(dec, ft, path); p != "" || err != nil {
				return p, err
			}
		}
	default:
		return "", nil
	}
	_, err = dec.Token() // the closing delimiter
	return "", err
}

// keysNameFields reports whether every object key in data is, letter for letter, the JSON name of
// a field somewhere in t's type tree, where no two such names differ only in case. Then each key
// is exact: encoding/json matched it to a field f of the struct it is in, the key equals some name
// g, g and f differ only in case, so g is f. It is the quick answer for well-formed bodies; a key
// that is not such a name (a map's key, an escaped or miscased key) leaves the answer to walkKeys.
func keysNameFields(data []byte, t reflect.Type) bool {
	names := fieldNamesOf(t)
	if names == nil {
		return false
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		start, escaped := i+1, false
		for i++; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				escaped = true
				i++
			}
		}
		key := data[start:min(i, len(data))]
		j := i + 1
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j < len(data) && data[j] == ':' && (escaped || !names[string(key)]) {
			return false
		}
	}
	return true
}

var fieldNameSets sync.Map // reflect.Type -> map[string]bool (nil: some two names differ only in case)

// fieldNamesOf is the set of JSON names of the struct fields in t's type tree (through pointers,
// slices, arrays and map values), or nil when two of them differ only in case.
func fieldNamesOf(t reflect.Type) map[string]bool {
	if m, ok := fieldNameSets.Load(t); ok {
		return m.(map[string]bool)
	}
	names := map[string]bool{}
	addNames(t, names, map[reflect.Type]bool{})
	folded := map[string]bool{}
	for name := range names { //determinism:ok a set; order does not matter
		folded[strings.ToLower(name)] = true
	}
	if len(folded) != len(names) {
		names = nil
	}
	fieldNameSets.Store(t, names)
	return names
}

func addNames(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return
	}
	seen[t] = true
	if et := elemType(t); et != anyType {
		addNames(et, names, seen)
	}
	for name, ft := range fieldsByTag(t) { //determinism:ok a set; order does not matter
		names[name] = true
		addNames(ft, names, seen)
	}
}

var anyType = reflect.TypeFor[any]()

// elemType is the type of t's elements (slice, array, map), or any when t has none to check.
func elemType(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return t.Elem()
	}
	return anyType
}

var tagMaps sync.Map // reflect.Type -> map[string]reflect.Type (nil for a type decoded without fields)

// fieldsByTag maps each JSON name of struct t's fields to the field's type; nil when t is not a
// struct whose keys are its fields (a map, time.Time, any).
func fieldsByTag(t reflect.Type) map[string]reflect.Type {
	if m, ok := tagMaps.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	var m map[string]reflect.Type
	if t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]() {
		m = map[string]reflect.Type{}
		addFields(t, m)
	}
	tagMaps.Store(t, m)
	return m
}

// addFields adds the JSON names of t's fields as encoding/json names them (tag, else the Go
// name; an untagged embedded struct's fields are promoted).
func addFields(t reflect.Type, m map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" && f.Tag.Get("json") == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			addFields(f.Type, m)
		case !f.IsExported():
		case name == "":
			m[f.Name] = f.Type
		default:
			m[name] = f.Type
		}
	}
}

// jsonFieldError turns an encoding/json error into a *FieldError naming the field.
func jsonFieldError(err error) *FieldError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fieldErr(typeErr.Field, "must be a JSON %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fieldErr("", "malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		return fieldErr(strings.TrimSuffix(name, `"`), "unknown field")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fieldErr("", "truncated JSON")
	}
	var timeErr *time.ParseError
	if errors.As(err, &timeErr) {
		return fieldErr("", "must be an RFC 3339 time")
	}
	return fieldErr("", "malformed JSON: %s", strings.TrimPrefix(msg, "json: "))
}

// locateBadField walks the JSON object data alongside struct type t and returns the path of the
// first field (in key order) whose value does not decode on its own, or "" if none is found.
func locateBadField(data []byte, t reflect.Type, prefix string) string {
	var obj map[string]json.RawMessage
	if t.Kind() != reflect.Struct || json.Unmarshal(data, &obj) != nil {
		return ""
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := fieldByJSONName(t, k)
		if !ok {
			continue
		}
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) {
			if p := locateBadField(obj[k], f.Type, path); p != "" {
				return p
			}
			continue
		}
		if json.Unmarshal(obj[k], reflect.New(f.Type).Interface()) != nil {
			return path
		}
	}
	return ""
}

func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if strings.EqualFold(tag, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	default:
		return "number (" + k + ")"
	}
}

var (
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	labelPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
)

// isName is namePattern.MatchString without the regexp machinery (every heartbeat checks its
// frontends on both ends; TestIsNameMatchesPattern keeps the two equal).
func isName(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidateName checks a worker name: 1..63 characters of letters, digits, '.', '_' and '-',
// starting with a letter or digit.
func ValidateName(field, name string) error {
	if name == "" {
		return fieldErr(field, "required")
	}
	if len(name) > NameLengthMax || !isName(name) {
		return fieldErr(field, "must be 1..%d letters, digits, '.', '_' or '-', starting with a letter or digit", NameLengthMax)
	}
	return nil
}

// Validate checks a registration body.
func (r *RegisterRequest) Validate() error {
	if err := ValidateName("name", r.Name); err != nil {
		return err
	}
	if r.Version == "" {
		return fieldErr("version", "required")
	}
	if err := validateShortText("version", r.Version, RevisionLengthMax); err != nil {
		return err
	}
	if err := validateLabels("labels", r.Labels); err != nil {
		return err
	}
	if err := validateFrontends("frontends", r.Frontends); err != nil {
		return err
	}
	return validateEndpoints("endpoints", r.Endpoints)
}

// Validate checks a heartbeat body.
func (h *Heartbeat) Validate() error {
	if h.Seq == 0 {
		return fieldErr("seq", "required (>= 1)")
	}
	if h.SentAt.IsZero() {
		return fieldErr("sentAt", "required")
	}
	if err := validateShortText("revision.active", h.Revision.Active, RevisionLengthMax); err != nil {
		return err
	}
	if err := validateShortText("revision.lastSeen", h.Revision.LastSeen, RevisionLengthMax); err != nil {
		return err
	}
	if err := h.Config.validate(); err != nil {
		return err
	}
	if err := validateShortText("coordination.policy", h.Coordination.Policy, RevisionLengthMax); err != nil {
		return err
	}
	if err := validateShortText("coordination.mode", h.Coordination.Mode, RevisionLengthMax); err != nil {
		return err
	}
	if err := validateFrontends("frontends", h.Frontends); err != nil {
		return err
	}
	return h.Health.validate()
}

func (c *ConfigStatus) validate() error {
	if err := validateShortText("config.source", c.Source, RevisionLengthMax); err != nil {
		return err
	}
	if err := validateSeconds("config.stalenessSecs", c.StalenessSecs); err != nil {
		return err
	}
	if c.ConsecutiveSyncFailures > c.SyncFailures {
		return fieldErr("config.consecutiveSyncFailures", "exceeds config.syncFailures")
	}
	return validateShortText("config.lastSyncError", c.LastSyncError, ShortTextLengthMax)
}

func (h *HealthStatus) validate() error {
	switch h.State {
	case HealthHealthy, HealthUnhealthy:
	case "":
		return fieldErr("health.state", "required (healthy or unhealthy)")
	default:
		return fieldErr("health.state", "must be healthy or unhealthy")
	}
	return validateSeconds("health.loopLagSeconds", h.LoopLagSeconds)
}

func validateSeconds(field string, v float64) error {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fieldErr(field, "must be a finite number >= 0")
	}
	return nil
}

func validateShortText(field, s string, max int) error {
	if len(s) > max {
		return fieldErr(field, "longer than %d bytes", max)
	}
	return nil
}

func validateLabels(field string, labels map[string]string) error {
	if len(labels) > LabelsMax {
		return fieldErr(field, "more than %d labels", LabelsMax)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad key in a stable order
	for _, k := range keys {
		if len(k) > LabelKeyLengthMax || !labelPattern.MatchString(k) {
			return fieldErr(field+"."+k, "label key must be 1..%d letters, digits, '.', '_', '/' or '-'", LabelKeyLengthMax)
		}
		if len(labels[k]) > LabelValueLenMax {
			return fieldErr(field+"."+k, "label value longer than %d bytes", LabelValueLenMax)
		}
	}
	return nil
}

func validateFrontends(field string, frontends []string) error {
	if len(frontends) > FrontendsMax {
		return fieldErr(field, "more than %d frontends", FrontendsMax)
	}
	for i, f := range frontends {
		if f == "" || len(f) > NameLengthMax || !isName(f) {
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "must be a frontend name such as postgres or mysql")
		}
	}
	return nil
}

// endpointSchemes are the URL schemes a worker may advertise for peers to forward to.
var endpointSchemes = []string{"http://", "https://", "grpc+tcp://", "grpc+tls://"}

func validateEndpoints(field string, endpoints map[string]string) error {
	if len(endpoints) > FrontendsMax {
		return fieldErr(field, "more than %d endpoints", FrontendsMax)
	}
	keys := make([]string, 0, len(endpoints))
	for k := range endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(k) > NameLengthMax || !isName(k) {
			return fieldErr(field+"."+k, "must be keyed by a frontend name such as trino or flightsql")
		}
		v := endpoints[k]
		if len(v) > EndpointLengthMax || !slices.ContainsFunc(endpointSchemes, func(p string) bool { return strings.HasPrefix(v, p) && len(v) > len(p) }) {
			return fieldErr(field+"."+k, "must be an http, https, grpc+tcp or grpc+tls URL of at most %d bytes", EndpointLengthMax)
		}
	}
	return nil
}
