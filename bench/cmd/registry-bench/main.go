// Command registry-bench measures the schema registry built into Gregor:
// how long registering a schema and looking one up take, one client and
// several at once, over its REST API as a serializer calls it.
//
//	cd bench && go run ./cmd/registry-bench -bin /path/to/gregor [-n 2000] [-c 8] [-d 5s]
//
// It starts the binary on a new data directory with
// schema.registry.listeners=http://127.0.0.1:0 and then, each phase on
// keep-alive connections:
//
//   - register: -n new Avro schemas (a record with a field of its own), each
//     in its own subject, POST /subjects/{s}/versions: one client, then -c
//     clients (a write to _schemas, acknowledged by the log, and the
//     materialized view updated before the answer);
//   - register again: the same schemas once more (a producer's
//     auto.register.schemas=true on every new serializer), answered from
//     the view with the existing id;
//   - lookup by id: GET /schemas/ids/{id} (what every deserializer does once
//     per id) for -d, one client and -c clients;
//   - lookup by schema: POST /subjects/{s} (a serializer with
//     use.latest.version or auto.register.schemas=false) for -d;
//   - a new version of one subject under BACKWARD_TRANSITIVE, -n/10 of
//     them: each is checked against every earlier version.
//
// It prints requests per second and the latency's median, 99th percentile
// and maximum for each.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "", "the gregor binary")
	n := flag.Int("n", 2000, "schemas to register")
	c := flag.Int("c", 8, "concurrent clients")
	d := flag.Duration("d", 5*time.Second, "duration of each lookup phase")
	flag.Parse()
	log.SetFlags(0)
	if *bin == "" {
		log.Fatal("-bin is needed")
	}
	dir, err := os.MkdirTemp("", "registry-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	url, stop, err := start(*bin, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *c * 2}, Timeout: 30 * time.Second}
	r := &runner{hc: hc, url: url}
	fmt.Printf("%s, %d schemas, %d clients\n", *bin, *n, *c)

	half := *n / 2
	ids := make([]int, *n)
	r.phase("register, 1 client", half, 1, func(i int) error {
		id, err := r.register(fmt.Sprintf("s-%d", i), schema(i))
		ids[i] = id
		return err
	})
	r.phase(fmt.Sprintf("register, %d clients", *c), *n-half, *c, func(i int) error {
		id, err := r.register(fmt.Sprintf("s-%d", half+i), schema(half+i))
		ids[half+i] = id
		return err
	})
	r.phase(fmt.Sprintf("register again, %d clients", *c), *n, *c, func(i int) error {
		id, err := r.register(fmt.Sprintf("s-%d", i), schema(i))
		if err == nil && id != ids[i] {
			err = fmt.Errorf("s-%d registered again as id %d, was %d", i, id, ids[i])
		}
		return err
	})
	for _, k := range []int{1, *c} {
		r.timed(fmt.Sprintf("lookup by id, %d clients", k), *d, k, func(i int) error {
			return r.get(fmt.Sprintf("/schemas/ids/%d", ids[i%len(ids)]))
		})
	}
	r.timed(fmt.Sprintf("lookup by schema, %d clients", *c), *d, *c, func(i int) error {
		j := i % *n
		return r.post(fmt.Sprintf("/subjects/s-%d", j), schema(j), nil)
	})
	if err := r.put("/config/evolving", `{"compatibility":"BACKWARD_TRANSITIVE"}`); err != nil {
		log.Fatal(err)
	}
	r.phase("new versions of one subject, BACKWARD_TRANSITIVE, 1 client", *n/10, 1, func(i int) error {
		_, err := r.register("evolving", evolved(i))
		return err
	})
}

// schema is the Avro record of schema i: a field of its own.
func schema(i int) string {
	return fmt.Sprintf(`{"type":"record","name":"r%d","fields":[{"name":"f%d","type":"long"}]}`, i, i)
}

// evolved is version i+1 of one record: every version adds a field with a
// default, so each is BACKWARD compatible with all before it.
func evolved(i int) string {
	var b bytes.Buffer
	b.WriteString(`{"type":"record","name":"evolving","fields":[{"name":"id","type":"long"}`)
	for j := range i {
		fmt.Fprintf(&b, `,{"name":"f%d","type":"string","default":""}`, j)
	}
	b.WriteString("]}")
	return b.String()
}

type runner struct {
	hc  *http.Client
	url string
}

func (r *runner) register(subject, avro string) (int, error) {
	var out struct{ ID int }
	err := r.post("/subjects/"+subject+"/versions", avro, &out)
	return out.ID, err
}

func (r *runner) post(path, avro string, out any) error {
	body, _ := json.Marshal(map[string]string{"schema": avro})
	return r.do(http.MethodPost, path, body, out)
}

func (r *runner) put(path, body string) error {
	return r.do(http.MethodPut, path, []byte(body), nil)
}

func (r *runner) get(path string) error { return r.do(http.MethodGet, path, nil, nil) }

func (r *runner) do(method, path string, body []byte, out any) error {
	req, err := http.NewRequest(method, r.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// phase runs f(0..n-1) on k clients and reports it.
func (r *runner) phase(name string, n, k int, f func(int) error) {
	var next atomic.Int64
	lat := make([][]time.Duration, k)
	t0 := time.Now()
	run(k, func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			s := time.Now()
			if err := f(i); err != nil {
				log.Fatalf("%s: %v", name, err)
			}
			lat[w] = append(lat[w], time.Since(s))
		}
	})
	report(name, time.Since(t0), slices.Concat(lat...))
}

// timed runs f(0, 1, …) on k clients for d and reports it.
func (r *runner) timed(name string, d time.Duration, k int, f func(int) error) {
	var next atomic.Int64
	lat := make([][]time.Duration, k)
	deadline := time.Now().Add(d)
	t0 := time.Now()
	run(k, func(w int) {
		for time.Now().Before(deadline) {
			i := int(next.Add(1) - 1)
			s := time.Now()
			if err := f(i); err != nil {
				log.Fatalf("%s: %v", name, err)
			}
			lat[w] = append(lat[w], time.Since(s))
		}
	})
	report(name, time.Since(t0), slices.Concat(lat...))
}

func run(k int, f func(w int)) {
	var wg sync.WaitGroup
	for w := range k {
		wg.Go(func() { f(w) })
	}
	wg.Wait()
}

func report(name string, took time.Duration, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	fmt.Printf("  %-58s %7d req %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", name, len(lat),
		float64(len(lat))/took.Seconds(), ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1]))
}

var registryLine = regexp.MustCompile(`msg="schema registry" url=(\S+)`)

// start runs the broker with the registry on and returns its URL.
func start(bin, dir string) (string, func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--data-dir", dir,
		"--set", "schema.registry.listeners=http://127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		cancel()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := registryLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case url := <-found:
		return url, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("%s logged no schema registry URL in 30 s", bin)
	}
}
