package compat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// installCache is a foreign client's packages installed once under the Go
// build cache, in $GOCACHE/<cache>/<hash of key>, so later runs install
// nothing.
type installCache struct {
	cache   string        // directory under GOCACHE: "gregor-compat-python"
	key     []byte        // what the install depends on, hashed into its directory's name
	marker  string        // path in the directory once installed: "bin/python"
	what    string        // in the log: "compat/python's requirements"
	timeout time.Duration // of install

	// probe reports why the install found in dir is no longer usable;
	// nil if it is.
	probe func(dir string) error
	// install installs into the empty directory tmp, failing the test if
	// it cannot.
	install func(ctx context.Context, tmp string)
}

// dir returns the directory of c's install, installing it on first use
// and again when probe refuses it. The install is made in a temporary
// directory beside it and renamed into place once install has succeeded,
// so an install found there is complete even when two test processes
// raced.
func (c installCache) dir(t *testing.T) string {
	t.Helper()
	sum := sha256.Sum256(c.key)
	gocache, err := exec.Command(goTool, "env", "GOCACHE").Output()
	if err != nil || strings.TrimSpace(string(gocache)) == "" || strings.TrimSpace(string(gocache)) == "off" {
		t.Fatalf("go env GOCACHE: %q, %v", gocache, err)
	}
	root := filepath.Join(strings.TrimSpace(string(gocache)), c.cache)
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	marker := filepath.Join(dir, c.marker)

	if _, err := os.Stat(marker); err == nil {
		// Reuse it if it still works (the client's runtime may have
		// changed underneath); else install it anew.
		err := c.probe(dir)
		if err == nil {
			return dir
		}
		t.Logf("%s is broken, installing again: %v", dir, err)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// Leftovers of runs killed while installing.
	if old, _ := filepath.Glob(filepath.Join(root, "tmp-*")); len(old) > 0 {
		for _, d := range old {
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.RemoveAll(d)
			}
		}
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	c.install(ctx, tmp)
	if err := os.Rename(tmp, dir); err != nil {
		// Another process renamed its install into place first: use that one.
		if _, serr := os.Stat(marker); serr != nil {
			t.Fatalf("moving %s into place: %v", dir, errors.Join(err, serr))
		}
	}
	t.Logf("installed %s in %s in %v", c.what, dir, time.Since(start).Round(100*time.Millisecond))
	return dir
}
