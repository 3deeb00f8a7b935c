package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic_ReplacesContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for _, want := range []string{"first\n", "second\n"} {
		if err := WriteFileAtomic(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("content %q, want %q", got, want)
		}
		if _, err := os.Stat(path + tmpSuffix); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("temporary file left behind: %v", err)
		}
	}
}

func TestWriteFileAtomic_FailedRenameRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	// A non-empty directory where the file should go: the rename fails.
	if err := os.MkdirAll(filepath.Join(path, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(path, []byte("data"))
	var se *StorageError
	if !errors.As(err, &se) || se.Op != "rename" || se.Path != path+tmpSuffix {
		t.Fatalf("err = %v, want a *StorageError from rename of %s", err, path+tmpSuffix)
	}
	if _, err := os.Stat(path + tmpSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

func TestWriteFileAtomic_MissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	err := WriteFileAtomic(path, []byte("data"))
	var se *StorageError
	if !errors.As(err, &se) || se.Op != "create" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a *StorageError from create wrapping fs.ErrNotExist", err)
	}
}
