package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// elfMachine is the ELF machine each platform's binary must be built for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func checkCmd(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dir := fs.String("dir", "", "OCI layout directory written by build")
	version := fs.String("version", "", "the version the image must carry")
	extract := fs.String("extract", "", "directory to extract the linux/amd64 gregor, entrypoint and env into")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms the index must hold, exactly")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *version == "" || *extract == "" {
		return errors.New("check: --dir, --version and --extract are required")
	}
	root, err := layout.ImageIndexFromPath(*dir)
	if err != nil {
		return err
	}
	rm, err := root.IndexManifest()
	if err != nil {
		return err
	}
	if len(rm.Manifests) != 1 {
		return fmt.Errorf("index.json: %d manifests, want 1 (the image index)", len(rm.Manifests))
	}
	top := rm.Manifests[0]
	if top.MediaType != types.OCIImageIndex {
		return fmt.Errorf("index.json: media type %s, want %s", top.MediaType, types.OCIImageIndex)
	}
	if got := top.Annotations["org.opencontainers.image.ref.name"]; got != *version {
		return fmt.Errorf("index.json: ref.name %q, want %q", got, *version)
	}
	idx, err := root.ImageIndex(top.Digest)
	if err != nil {
		return err
	}
	// Every blob's digest and size, every config's diff_ids.
	if err := validate.Index(idx); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var got []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return fmt.Errorf("manifest %s has no platform", d.Digest)
		}
		plat := d.Platform.OS + "/" + d.Platform.Architecture
		got = append(got, plat)
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		out := ""
		if plat == "linux/amd64" {
			out = *extract
		}
		if err := checkImage(img, d, *version, out); err != nil {
			return fmt.Errorf("%s: %w", plat, err)
		}
		fmt.Printf("ociimage: %s %s ok\n", plat, d.Digest)
	}
	want := strings.Split(*platforms, ",")
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("platforms %v, want %v", got, want)
	}
	return nil
}

// checkImage requires one image to be as platformImage builds it and, when
// out is not empty, extracts its binary, entrypoint and env into out.
func checkImage(img v1.Image, d v1.Descriptor, version, out string) error {
	if d.MediaType != types.OCIManifestSchema1 {
		return fmt.Errorf("media type %s, want %s", d.MediaType, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	c := cf.Config
	switch {
	case cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture:
		return fmt.Errorf("config is %s/%s", cf.OS, cf.Architecture)
	case !slices.Equal(c.Entrypoint, Entrypoint):
		return fmt.Errorf("entrypoint %q, want %q", c.Entrypoint, Entrypoint)
	case len(c.Cmd) != 0:
		return fmt.Errorf("cmd %q, want none", c.Cmd)
	case !slices.Equal(c.Env, Env):
		return fmt.Errorf("env %q, want %q", c.Env, Env)
	case c.User != User:
		return fmt.Errorf("user %q, want %q", c.User, User)
	case !slices.Equal(slices.Sorted(maps.Keys(c.Volumes)), []string{DataDir}):
		return fmt.Errorf("volumes %v, want [%s]", slices.Sorted(maps.Keys(c.Volumes)), DataDir)
	case !slices.Equal(slices.Sorted(maps.Keys(c.ExposedPorts)), Ports):
		return fmt.Errorf("exposed ports %v, want %v", slices.Sorted(maps.Keys(c.ExposedPorts)), Ports)
	case c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, Healthcheck):
		return fmt.Errorf("healthcheck %+v, want %q", c.Healthcheck, Healthcheck)
	case c.Labels["org.opencontainers.image.version"] != version:
		return fmt.Errorf("label version %q, want %q", c.Labels["org.opencontainers.image.version"], version)
	case c.Labels["org.opencontainers.image.revision"] == "":
		return errors.New("no org.opencontainers.image.revision label")
	case c.Labels["org.opencontainers.image.source"] == "":
		return errors.New("no org.opencontainers.image.source label")
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	if len(layers) != 1 {
		return fmt.Errorf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	var exe []byte
	sawData := false
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch strings.TrimSuffix(h.Name, "/") {
		case "gregor":
			if h.Typeflag != tar.TypeReg || h.Mode&0o777 != 0o755 {
				return fmt.Errorf("/gregor: type %c mode %o, want a 0755 file", h.Typeflag, h.Mode)
			}
			if exe, err = io.ReadAll(tr); err != nil {
				return err
			}
		case strings.TrimPrefix(DataDir, "/"):
			if h.Typeflag != tar.TypeDir || h.Uid != uid || h.Gid != uid {
				return fmt.Errorf("%s: type %c owner %d:%d, want a directory of %d:%d", DataDir, h.Typeflag, h.Uid, h.Gid, uid, uid)
			}
			sawData = true
		}
	}
	if exe == nil || !sawData {
		return fmt.Errorf("layer lacks /gregor or %s", DataDir)
	}
	ef, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		return fmt.Errorf("/gregor: %w", err)
	}
	if ef.Machine != elfMachine[cf.Architecture] {
		return fmt.Errorf("/gregor is for %s, want %s", ef.Machine, elfMachine[cf.Architecture])
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("/gregor is dynamically linked; the image has no libc")
		}
	}
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "gregor"), exe, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "entrypoint"), []byte(strings.Join(c.Entrypoint, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "env"), []byte(strings.Join(c.Env, "\n")+"\n"), 0o644)
}
