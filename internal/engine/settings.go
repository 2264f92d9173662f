package engine

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"gorm.io/gorm"
)

// A statement's Settings are a sync.Map, which allocates its root on the
// first call of any of its methods, even a Load of a key it does not hold.
// Most statements never hold a key, and GORM never touches their Settings:
// the plugin reads them only once something was stored, so that routing
// costs a statement no allocation.

// settingsUntouched reports whether no method of m was ever called, so that
// m holds nothing. It reads sync.Map's first word, the flag its
// implementation sets on first use; settingsPeekable says whether this Go's
// sync.Map is laid out so.
func settingsUntouched(m *sync.Map) bool {
	return settingsPeekable && atomic.LoadUint32((*uint32)(unsafe.Pointer(m))) == 0
}

// settingsPeekable is true when a sync.Map's first word is zero until its
// first use and one after: otherwise every read goes to the map.
var settingsPeekable = func() bool {
	var m sync.Map
	flag := (*uint32)(unsafe.Pointer(&m))
	if unsafe.Sizeof(m) < unsafe.Sizeof(uint32(0)) || atomic.LoadUint32(flag) != 0 {
		return false
	}
	m.Load(struct{}{})
	return atomic.LoadUint32(flag) == 1
}()

// loadSetting is loadSetting(stmt, key), which allocates nothing on a
// statement whose Settings were never used.
func loadSetting(stmt *gorm.Statement, key any) (any, bool) {
	if settingsUntouched(&stmt.Settings) {
		return nil, false
	}
	return stmt.Settings.Load(key)
}
