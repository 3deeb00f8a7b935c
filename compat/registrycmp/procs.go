package registrycmp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/compat/kafkaref"
)

// ApicurioVersion is the Apicurio Registry that compat/apicurio/pom.xml
// builds (why not 3.x: see that pom).
const ApicurioVersion = "2.4.2.Final"

// moduleRoot is the directory of Gregor's go.mod.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Available reports whether java and mvn are on the PATH (nil) or which is
// missing.
func Available() error {
	for _, c := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("registrycmp: %s is not on the PATH (Apicurio needs a JDK 17+ and Maven)", c)
		}
	}
	return nil
}

// Proc is a started registry process.
type Proc struct {
	URL   string // the Confluent API's base, no trailing slash
	cmd   *exec.Cmd
	done  chan struct{}
	Ready time.Duration // from start until it answered
}

// Stop ends the process (SIGTERM to its group, SIGKILL after 10 s).
func (p *Proc) Stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = kafkaref.SignalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = kafkaref.SignalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// BuildGregor builds ./cmd/gregor into dir and returns the binary's path.
func BuildGregor(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "gregor")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gregor")
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gregor: %v\n%s", err, out)
	}
	return bin, nil
}

var registryLine = regexp.MustCompile(`msg="schema registry" url=(\S+)`)

// StartGregor starts bin with its schema registry on a free loopback port
// and a fresh data directory; it returns once the registry's URL is logged.
func StartGregor(ctx context.Context, bin, dataDir string, log io.Writer) (*Proc, error) {
	start := time.Now()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data-dir", dataDir,
		"--set", "schema.registry.listeners=http://127.0.0.1:0")
	cmd.SysProcAttr = kafkaref.GroupSysProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, "gregor:", sc.Text())
			if m := registryLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	select {
	case p.URL = <-found:
	case <-p.done:
		return nil, errors.New("gregor exited before its schema registry listened")
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	if err := waitHTTP(ctx, p.URL+"/subjects", p.done); err != nil {
		p.Stop()
		return nil, err
	}
	p.Ready = time.Since(start)
	return p, nil
}

// ApicurioJar builds compat/apicurio (mvn package, in the user cache
// directory under gregor-apicurio/<hash of the project's files>, so that
// nothing is written into the repository) unless that was done before, and
// returns the runnable jar. The first build downloads about 150 MB into
// ~/.m2 and takes about a minute; later calls find the jar.
func ApicurioJar(ctx context.Context, log io.Writer) (string, error) {
	src := filepath.Join(moduleRoot(), "compat", "apicurio")
	h := sha256.New()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "gregor-apicurio", hex.EncodeToString(h.Sum(nil)[:8]))
	jar := filepath.Join(dir, "target", "apicurio-registry-run-1-runner.jar")
	if _, err := os.Stat(jar); err == nil {
		return jar, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "registrycmp: building Apicurio Registry %s in %s (mvn package)\n", ApicurioVersion, dir)
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "package", "-DskipTests")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("registrycmp: mvn package in %s: %v\n%s", dir, err, out)
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("registrycmp: mvn package gave no %s", jar)
	}
	return jar, nil
}

// StartApicurio runs jar on a free loopback port with its default storage
// (H2 in memory) and returns once its Confluent API answers.
func StartApicurio(ctx context.Context, jar string, log io.Writer) (*Proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cmd := exec.Command("java", "-Xmx512m", "-Dquarkus.http.host=127.0.0.1",
		fmt.Sprintf("-Dquarkus.http.port=%d", port), "-jar", jar)
	cmd.SysProcAttr = kafkaref.GroupSysProcAttr()
	cmd.Stdout, cmd.Stderr = prefixed(log, "apicurio: "), prefixed(log, "apicurio: ")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{}), URL: fmt.Sprintf("http://127.0.0.1:%d/apis/ccompat/v7", port)}
	go func() { _ = cmd.Wait(); close(p.done) }()
	if err := waitHTTP(ctx, p.URL+"/subjects", p.done); err != nil {
		p.Stop()
		return nil, fmt.Errorf("apicurio: %w", err)
	}
	p.Ready = time.Since(start)
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until it answers 200, the process exits or ctx ends.
func waitHTTP(ctx context.Context, url string, exited <-chan struct{}) error {
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before %s answered", url)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer: %w", url, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func prefixed(w io.Writer, prefix string) io.Writer { return &prefixWriter{w, prefix} }

func (p *prefixWriter) Write(b []byte) (int, error) {
	if p.w == io.Discard {
		return len(b), nil
	}
	_, err := fmt.Fprintf(p.w, "%s%s", p.prefix, b)
	return len(b), err
}
