// Command ociimage builds and checks Gregor's OCI image without a
// container daemon, with go-containerregistry (make image, make
// check-image). It is its own module so that the broker's go.mod does not
// carry go-containerregistry.
//
//	ociimage build --out DIR --version V --revision R --source URL --created UNIX \
//	        linux/amd64=BIN linux/arm64=BIN
//	ociimage check --dir DIR --version V --extract DIR
//
// build writes an OCI image layout (DIR/oci-layout, index.json, blobs/)
// whose index.json names one image index, tagged V, of one image per
// platform. Each image is a single layer on an empty base (FROM scratch):
//
//	/gregor            the static binary given for that platform, 0755
//	/data/   the data directory, owned by 65532:65532, a volume
//	/tmp/              1777
//
// and runs as 65532:65532 the entrypoint in Entrypoint below. Every
// timestamp is --created (make image passes the last commit's time), so
// the same binaries give the same digests.
//
// check reads such a layout back, requires the index, platforms, config
// (entrypoint, env, user, volume, ports, labels) and layer contents to be
// as build writes them, and extracts the linux/amd64 binary to
// DIR/gregor, its entrypoint to DIR/entrypoint and its env to DIR/env
// (one per line) for scripts/check-image.sh to run.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is: its entrypoint, environment, user, data volume and
// ports. check requires exactly these.
var (
	Entrypoint = []string{"/gregor", "serve", "--listen", "0.0.0.0:9092", "--data-dir", "/data"}
	// GREGOR_ADVERTISE=:9092 advertises the container's host name (an
	// empty host is replaced by os.Hostname()); set it to the address
	// clients dial, e.g. localhost:9092 with -p 9092:9092.
	Env = []string{
		"GREGOR_ADVERTISE=:9092",
		"GREGOR_HTTP=0.0.0.0:9644",
	}
	User    = "65532:65532"
	DataDir = "/data"
	Ports   = []string{"9092/tcp", "9644/tcp"}
	// Healthcheck is the binary checking its own /readyz (no shell or curl
	// in the image); Docker honours it, OCI runtimes ignore it.
	Healthcheck = []string{"CMD", "/gregor", "healthcheck"}
)

const uid = 65532

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ociimage build|check …")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = buildCmd(os.Args[2:])
	case "check":
		err = checkCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func labels(version, revision, source string, created time.Time) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "gregor",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.created":  created.UTC().Format(time.RFC3339),
	}
}

func buildCmd(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("out", "", "OCI layout directory to write (removed first)")
	version := fs.String("version", "", "image version (label and tag)")
	revision := fs.String("revision", "", "source revision (label)")
	source := fs.String("source", "", "source repository URL (label)")
	createdUnix := fs.Int64("created", 0, "creation time, Unix seconds (every timestamp in the image)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *version == "" || fs.NArg() == 0 {
		return errors.New("build: --out, --version and at least one OS/ARCH=BINARY are required")
	}
	created := time.Unix(*createdUnix, 0).UTC()
	lbl := labels(*version, *revision, *source, created)

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, a := range fs.Args() {
		plat, bin, ok := strings.Cut(a, "=")
		goos, arch, ok2 := strings.Cut(plat, "/")
		if !ok || !ok2 {
			return fmt.Errorf("build: %q: want OS/ARCH=BINARY", a)
		}
		img, err := platformImage(goos, arch, bin, created, lbl)
		if err != nil {
			return fmt.Errorf("build %s: %w", plat, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}},
		})
	}
	idx = mutate.Annotations(idx, lbl).(v1.ImageIndex)

	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	p, err := layout.Write(*out, empty.Index)
	if err != nil {
		return err
	}
	// ref.name is the tag skopeo/podman read (oci:DIR:VERSION);
	// io.containerd.image.name is the name docker load gives the image.
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": *version,
		"io.containerd.image.name":          "docker.io/library/gregor:" + *version,
	})); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("ociimage: %s: index %s (%d platforms)\n", *out, d, fs.NArg())
	return nil
}

// platformImage is one platform's image: the layer described in the
// package comment on an empty base, with the config above.
func platformImage(goos, arch, bin string, created time.Time, lbl map[string]string) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdrs := []*tar.Header{
		{Name: "gregor", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(exe))},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "var/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "var/lib/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: uid},
	}
	for _, h := range hdrs {
		h.ModTime, h.Format = created, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(exe); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "make image (scripts/ociimage): /gregor, /data, /tmp",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = goos, arch
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint:   slices.Clone(Entrypoint),
		Env:          slices.Clone(Env),
		User:         User,
		WorkingDir:   DataDir,
		Volumes:      map[string]struct{}{DataDir: {}},
		ExposedPorts: map[string]struct{}{},
		Labels:       lbl,
		StopSignal:   "SIGTERM",
		Healthcheck: &v1.HealthConfig{
			Test:        slices.Clone(Healthcheck),
			Interval:    5 * time.Second,
			Timeout:     3 * time.Second,
			StartPeriod: 5 * time.Second,
			Retries:     5,
		},
	}
	for _, p := range Ports {
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	return mutate.ConfigFile(img, cf)
}
