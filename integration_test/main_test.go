package integration

import (
	"os"
	"testing"

	"github.com/shardid/shardid/integration_test/internal/testdb"
)

// TestMain runs this package's database tests on databases of its own, as
// go test runs the packages of the module at once; a run of every test, the
// longest package of the suite, is shared out among two processes at once,
// its longest tests first (four took longer in CI, beside the other
// packages, and starved the servers).
func TestMain(m *testing.M) {
	testdb.Package("integration")
	os.Exit(testdb.RunInParts(m, 2, "TestDifferential", "TestHistoryLinearizableThroughMoves", "TestUniqueAcrossProcesses",
		"TestMoveCrashAndResume", "TestMoveOnlineUnderLoad", "TestInstagramTwoProcessesOneShard"))
}
