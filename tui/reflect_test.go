package tui

import "reflect"

// reflectFields returns the exported field values of the struct p points to.
func reflectFields(p any) []any {
	v := reflect.ValueOf(p).Elem()
	out := make([]any, 0, v.NumField())
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).IsExported() {
			out = append(out, v.Field(i).Interface())
		}
	}
	return out
}
