// Package strictjson decodes user-written JSON strictly (unknown, duplicate
// and miscased fields are errors) and phrases the errors for people: one
// line, naming the field and the JSON type it wanted. Both the manifest
// reader and the --instance-types reader use it.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	kjson "sigs.k8s.io/json"
)

// ValueError wraps a decoding error that is neither a type mismatch nor a
// strict-field problem, e.g. a value a field's own UnmarshalJSON refused;
// callers that can name the bad value (a quantity, say) look for it.
type ValueError struct{ Err error }

func (e *ValueError) Error() string { return e.Err.Error() }
func (e *ValueError) Unwrap() error { return e.Err }

// Decode decodes j into v strictly. A type mismatch is reported as
// "FIELD: expected a string, got number"; strict-field problems are joined;
// other decoding errors come as a *ValueError.
func Decode(j []byte, v any) error {
	fields, err := DecodeFields(j, v)
	if err != nil {
		return err
	}
	return errors.Join(fields...)
}

// DecodeFields decodes j into v as Decode does, but returns the strict-field
// problems (unknown, duplicate and miscased fields, one error each) apart
// from err: they do not stop decoding, so v holds everything else, as
// kubectl's warn field validation would apply it. err is a type mismatch
// ("FIELD: expected a string, got number") or a *ValueError.
func DecodeFields(j []byte, v any) (fields []error, err error) {
	strict, err := kjson.UnmarshalStrict(j, v)
	var ute *json.UnmarshalTypeError
	switch {
	case errors.As(err, &ute) && ute.Field != "":
		if msg, ok := numberError(ute); ok {
			return nil, fmt.Errorf("%s: %s", ute.Field, msg)
		}
		return nil, fmt.Errorf("%s: expected %s, got %s", ute.Field, TypeName(ute.Type), ute.Value)
	case err != nil:
		return nil, &ValueError{err}
	}
	return strict, nil
}

// numberError phrases a number an integer field cannot hold: a fraction
// or exponent, or a value outside the field's range (replicas is an
// int32: 2147483648 is one too many).
func numberError(ute *json.UnmarshalTypeError) (string, bool) {
	literal, ok := strings.CutPrefix(ute.Value, "number ")
	t := ute.Type
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !ok || t == nil {
		return "", false
	}
	bits := t.Bits()
	var kind string
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		kind = fmt.Sprintf("an int%d holds -%d to %d", bits, uint64(1)<<(bits-1), uint64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		kind = fmt.Sprintf("a uint%d holds 0 to %d", bits, uint64(math.MaxUint64)>>(64-bits))
	default:
		return "", false
	}
	if strings.ContainsAny(literal, ".eE") {
		return fmt.Sprintf("%s is not a whole number", literal), true
	}
	return fmt.Sprintf("%s is out of range: %s", literal, kind), true
}

// TypeName describes a Go type in JSON terms ("a string", "a list", ...).
func TypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return TypeName(t.Elem())
	default:
		return "a number"
	}
}

// OneLine joins the lines of a message with single spaces.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// YAMLError phrases an error of converting YAML to JSON (sigs.k8s.io/yaml)
// on one line, without the converter's prefix. A value JSON cannot hold,
// YAML's .nan or .inf, is named as such rather than as the encoder's
// "unsupported value".
func YAMLError(err error) string {
	if uv, ok := errors.AsType[*json.UnsupportedValueError](err); ok {
		return fmt.Sprintf("%s is not a finite number: a price or quantity must be a finite number (YAML's .nan and .inf are not)", uv.Str)
	}
	return OneLine(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
}
