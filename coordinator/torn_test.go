package coordinator

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCoordinator_TornMetaPageFallsBack simulates a torn write of each of
// bbolt's two meta pages (page size 4096: meta pages are pages 0 and 1):
// the store opens on the other, intact meta page, and the offsets committed
// before the torn transaction are all there.
func TestCoordinator_TornMetaPageFallsBack(t *testing.T) {
	for page := 0; page < 2; page++ {
		dir := t.TempDir()
		clock := newManualClock()
		c, err := Open(testConfig(dir, clock))
		if err != nil {
			t.Fatal(err)
		}
		commit(t, c, "g", "", -1, 10) // acknowledged and durable
		commit(t, c, "g", "", -1, 20) // its meta page write is the one torn below, or not
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, dbFileName)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		garbage := make([]byte, 512)
		for i := range garbage {
			garbage[i] = byte(i*7 + 3)
		}
		if _, err := f.WriteAt(garbage, int64(page)*4096+16); err != nil {
			t.Fatal(err)
		}
		f.Close()
		c2, err := Open(testConfig(dir, clock))
		if err != nil {
			t.Fatalf("meta page %d torn: open failed: %v", page, err)
		}
		got := c2.Committed("g")["t"][0]
		if got != 10 && got != 20 {
			t.Fatalf("meta page %d torn: committed offset %d, want 20 or (rolled back one transaction) 10", page, got)
		}
		// The store keeps working.
		commit(t, c2, "g", "", -1, 30)
		if got := c2.Committed("g")["t"][0]; got != 30 {
			t.Fatalf("after reopen: commit gives %d", got)
		}
		c2.Close()
	}
}
