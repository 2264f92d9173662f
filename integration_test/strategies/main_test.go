package strategies_test

import (
	"testing"

	"github.com/shardid/shardid/integration_test/internal/testdb"
)

// TestMain runs this package's database tests on databases of its own, as
// go test runs the packages of the module at once.
func TestMain(m *testing.M) {
	testdb.Package("strategies")
	m.Run()
}
