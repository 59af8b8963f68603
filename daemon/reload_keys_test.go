package daemon

import (
	"reflect"
	"testing"

	"github.com/subpool/subpool/internal/config"
)

// A key config.Diff reports as live must be one withLiveKeys applies, and
// the reverse: otherwise an edit is announced as applied and is not, or
// applied and announced as waiting for a restart. The two lists live in
// different packages, so this test keeps them in step, field by field.
func TestLiveKeysAreTheOnesApplied(t *testing.T) {
	base := config.Default()
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			next := base
			nv := reflect.ValueOf(&next).Elem().Field(i)
			nv.Set(changed(t, nv))
			d := config.Diff(base, next)
			if len(d.Live)+len(d.Restart) == 0 {
				t.Fatalf("changing %s is not seen by config.Diff", f.Name)
			}
			live := len(d.Live) > 0
			applied := withLiveKeys(base, next)
			took := reflect.DeepEqual(reflect.ValueOf(applied).Field(i).Interface(), nv.Interface())
			if live != took {
				t.Errorf("%s: config.Diff says live=%v (%+v), withLiveKeys applies it=%v", f.Name, live, d, took)
			}
		})
	}
}

// changed returns a value of v's type that differs from v.
func changed(t *testing.T, v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	out.Set(v)
	switch v.Kind() {
	case reflect.Bool:
		out.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		out.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		out.SetFloat(v.Float() + 1)
	case reflect.String:
		out.SetString(v.String() + "x")
	case reflect.Slice:
		out.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, v.Len()+1), append(sliceValues(v), reflect.New(v.Type().Elem()).Elem())...))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		k := changed(t, reflect.New(v.Type().Key()).Elem())
		m.SetMapIndex(k, reflect.New(v.Type().Elem()).Elem())
		out.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(changed(t, v.Field(i)))
				return out
			}
		}
		t.Fatalf("no exported field to change in %s", v.Type())
	default:
		t.Fatalf("cannot change a %s", v.Type())
	}
	return out
}

func sliceValues(v reflect.Value) []reflect.Value {
	out := make([]reflect.Value, v.Len())
	for i := range out {
		out[i] = v.Index(i)
	}
	return out
}
