package elfinfo

import (
	"reflect"
)

// funcPC returns the entry address of a Go function value.
func funcPC(f any) uint64 { return uint64(reflect.ValueOf(f).Pointer()) }
