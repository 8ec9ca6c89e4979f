// etcd-peer: etcd's STM and Mutex on the workloads avout-bench measures, printed as JSON rows
// ({"rows": [{"workload", "p50_ms", "p99_ms", "operations_per_second", "retries"}]}, the
// contended rows with "client_cpu_ms" and, given -server-pid, "server_cpu_ms" per operation)
// that avout-bench reads. Built in GOPATH mode against Debian's golang-etcd-server-dev (etcd 3.4).
// Usage: etcd-peer -endpoint 127.0.0.1:PORT [-iterations N] [-clients 8] [-accounts 20] [-warmup 4s]
// [-readwrite-only] [-bank-only] [-contended-reads-only] [-latencies] [-server-pid PID] [-recipes -ttl 2 -handovers 5]
// (recipes.go)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

// row is one measured workload, in avout-bench's field names.
type row struct {
	Workload   string    `json:"workload"`
	P50        float64   `json:"p50_ms"`
	P99        float64   `json:"p99_ms"`
	Throughput float64   `json:"operations_per_second"`
	Retries    float64   `json:"retries"`
	Latencies  []float64 `json:"latencies_ms,omitempty"`  // with -latencies: every operation's
	ClientCPU  float64   `json:"client_cpu_ms,omitempty"` // contended rows: this program's CPU per operation
	ServerCPU  float64   `json:"server_cpu_ms,omitempty"` // contended rows with -server-pid: etcd's
}

var (
	endpoint   = flag.String("endpoint", "127.0.0.1:2379", "etcd client address")
	iterations = flag.Int("iterations", 500, "operations per uncontended workload")
	clients    = flag.Int("clients", 8, "clients of the contended workloads (one connection each)")
	accounts   = flag.Int("accounts", 20, "accounts of the bank")
	warmUp     = flag.Duration("warmup", 4*time.Second, "gets, puts and STM transactions run before measuring")
	// avout-bench's interleaved rounds run the peer once per round for these rows alone.
	readWriteOnly = flag.Bool("readwrite-only", false, "measure only the uncontended transactions of the rounds (read-write over k keys, read-only over 8, read 100 write 1)")
	bankOnly      = flag.Bool("bank-only", false, "measure only the contended bank")
	readsOnly     = flag.Bool("contended-reads-only", false, "measure only the contended transactions that read 100 keys and write 1 of them")
	withLatencies = flag.Bool("latencies", false, "add every operation's latency (ms) to its row")
	serverPid     = flag.Int("server-pid", 0, "etcd's pid: its CPU per operation in the contended rows")
	rows          []row
)

func connect() *clientv3.Client {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		fail(err)
	}
	return client
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "etcd-peer:", err)
	os.Exit(1)
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

// record adds a row from per-operation latencies (ms); wall > 0 gives throughput over the
// wall time (contended runs), otherwise 1 / mean latency.
func record(workload string, latencies []float64, wall time.Duration, retries int) {
	sort.Float64s(latencies)
	total := 0.0
	for _, l := range latencies {
		total += l
	}
	throughput := 1000 * float64(len(latencies)) / total
	if wall > 0 {
		throughput = float64(len(latencies)) / wall.Seconds()
	}
	measured := row{Workload: workload, P50: percentile(latencies, 0.5), P99: percentile(latencies, 0.99),
		Throughput: throughput, Retries: float64(retries) / float64(len(latencies))}
	if *withLatencies {
		measured.Latencies = latencies
	}
	rows = append(rows, measured)
}

// timeEach runs operation n times and returns its latencies in ms.
func timeEach(n int, operation func()) []float64 {
	latencies := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		operation()
		latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
	}
	return latencies
}

// contended runs body(client index, operation index) per client concurrently; each client has
// its own connection, as avout's processes each have their own session. Throughput is over the
// window from all clients connected to the last one done, as avout-bench measures its own.
func contended(workload string, perClient int, body func(c *clientv3.Client, index int) func() int) {
	var mutex sync.Mutex
	var all []float64
	retries := 0
	var wait, ready sync.WaitGroup
	gate := make(chan struct{}) // closed once every client is connected: the timed window starts
	for index := 0; index < *clients; index++ {
		wait.Add(1)
		ready.Add(1)
		go func(index int) {
			defer wait.Done()
			client := connect()
			defer client.Close()
			operation := body(client, index)
			ready.Done()
			<-gate
			own := 0
			latencies := timeEach(perClient, func() { own += operation() })
			mutex.Lock()
			all = append(all, latencies...)
			retries += own
			mutex.Unlock()
		}(index)
	}
	ready.Wait()
	clientBefore, serverBefore := ownCPU(), processCPU(*serverPid)
	start := time.Now()
	close(gate)
	wait.Wait()
	record(workload, all, time.Since(start), retries)
	operations := float64(len(all))
	rows[len(rows)-1].ClientCPU = (ownCPU() - clientBefore) / operations
	if *serverPid != 0 {
		rows[len(rows)-1].ServerCPU = (processCPU(*serverPid) - serverBefore) / operations
	}
}

// ownCPU is the CPU time (user + system, ms) this program has used so far.
func ownCPU() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	ms := func(t syscall.Timeval) float64 { return float64(t.Sec)*1000 + float64(t.Usec)/1000 }
	return ms(usage.Utime) + ms(usage.Stime)
}

// processCPU is the CPU time (user + system, ms) process pid has used so far, from
// /proc/pid/stat (utime and stime, in clock ticks of 1/100 s); 0 when unreadable.
func processCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	text := string(stat)
	// The fields after the command's closing parenthesis start with field 3 (state).
	fields := strings.Fields(text[strings.LastIndex(text, ")")+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) * 10
}

// bank runs the contended bank, perClient transfers per client, in each isolation: the clients
// transfer 1 between two random accounts of the same bank.
func bank(keys func(stem string, k int) []string, perClient int) {
	for _, isolation := range isolations {
		accountKeys := keys("bank-"+isolation.name, *accounts)
		contended(fmt.Sprintf("bank transfer, %d clients in 1 process: etcd STM %s", *clients, isolation.name), perClient,
			func(c *clientv3.Client, index int) func() int {
				random := rand.New(rand.NewSource(int64(index) + 1))
				return func() int {
					from := random.Intn(*accounts)
					to := (from + 1 + random.Intn(*accounts-1)) % *accounts
					return stm(c, isolation.value, func(s concurrency.STM) error {
						s.Get(accountKeys[from], accountKeys[to]) // both in one round trip, as avout's deref_all
						add(s, accountKeys[from], -1)
						add(s, accountKeys[to], 1)
						return nil
					})
				}
			})
	}
}

// contendedReads runs, in each isolation, perClient transactions per client that read 100 keys
// (in one round trip) and add 1 to one of them: a serializable commit checks every key read,
// so another client's write to any of them makes it run again.
func contendedReads(keys func(stem string, k int) []string, perClient int) {
	for _, isolation := range isolations {
		names := keys("reads-"+isolation.name, 100)
		contended(fmt.Sprintf("read 100 keys, write 1 of them, %d clients in 1 process: etcd STM %s", *clients, isolation.name), perClient,
			func(c *clientv3.Client, index int) func() int {
				random := rand.New(rand.NewSource(int64(index) + 1))
				return func() int {
					written := names[random.Intn(len(names))]
					return stm(c, isolation.value, func(s concurrency.STM) error {
						s.Get(names...) // every key in one round trip; each Get below reads its value
						for _, name := range names {
							s.Get(name)
						}
						add(s, written, 1)
						return nil
					})
				}
			})
	}
}

// stm runs apply in an STM of the given isolation; returns its retries (apply runs - 1).
func stm(client *clientv3.Client, isolation concurrency.Isolation, apply func(concurrency.STM) error) int {
	runs := 0
	_, err := concurrency.NewSTM(client, func(s concurrency.STM) error { runs++; return apply(s) },
		concurrency.WithIsolation(isolation))
	if err != nil {
		fail(err)
	}
	return runs - 1
}

func add(s concurrency.STM, key string, delta int) {
	value, _ := strconv.Atoi(s.Get(key))
	s.Put(key, strconv.Itoa(value+delta))
}

func main() {
	flag.Parse()
	if *lead != "" {
		leadUntilKilled(*lead)
	}
	client := connect()
	defer client.Close()
	ctx := context.Background()
	prefix := fmt.Sprintf("/bench-%d/", time.Now().UnixNano())
	n := *iterations

	// The floor: one linearizable Get, one Put, and a Get then a Put (a read-modify-write).
	floorKey := prefix + "floor"
	if _, err := client.Put(ctx, floorKey, "0"); err != nil {
		fail(err)
	}
	// Warmed as avout-bench warms its servers: nothing measured pays for a fresh server.
	for start := time.Now(); time.Since(start) < *warmUp; {
		client.Get(ctx, floorKey)
		client.Put(ctx, floorKey, "0")
		stm(client, concurrency.Serializable, func(s concurrency.STM) error {
			add(s, floorKey, 1)
			return nil
		})
	}
	keys := func(stem string, k int) []string { return makeKeys(client, prefix, stem, k) }
	if *readWriteOnly {
		readWrite(client, prefix, n)
		readOnly(keys, client, n)
		readManyWriteOne(keys, client, n)
		finish()
		return
	}
	if *bankOnly {
		bank(keys, n/2)
		finish()
		return
	}
	if *readsOnly {
		contendedReads(keys, n/2)
		finish()
		return
	}
	if *recipes {
		recipeRows(client, prefix, n)
		finish()
		return
	}
	record("etcd get", timeEach(n, func() { client.Get(ctx, floorKey) }), 0, 0)
	record("etcd put", timeEach(n, func() { client.Put(ctx, floorKey, "1") }), 0, 0)
	record("etcd get + put", timeEach(n, func() { client.Get(ctx, floorKey); client.Put(ctx, floorKey, "2") }), 0, 0)

	readWrite(client, prefix, n)
	readOnly(keys, client, n)

	bank(keys, n/2)

	// The lock: acquire and release, alone then from every client at once.
	lockOnce := func(mutex *concurrency.Mutex) {
		if err := mutex.Lock(ctx); err != nil {
			fail(err)
		}
		if err := mutex.Unlock(ctx); err != nil {
			fail(err)
		}
	}
	session, err := concurrency.NewSession(client)
	if err != nil {
		fail(err)
	}
	alone := concurrency.NewMutex(session, prefix+"lock-alone")
	record("lock acquire+release, 1 process: etcd Mutex", timeEach(n, func() { lockOnce(alone) }), 0, 0)
	session.Close()
	// Gaggle's contended case, as avout-bench's lock rows: 10 clients, one key, a 100 us task.
	*clients = 10
	contended("lock, 10 processes, one key: etcd Mutex", n/5,
		func(c *clientv3.Client, index int) func() int {
			own, err := concurrency.NewSession(c)
			if err != nil {
				fail(err)
			}
			mutex := concurrency.NewMutex(own, prefix+"lock-contended")
			return func() int {
				if err := mutex.Lock(ctx); err != nil {
					fail(err)
				}
				for start := time.Now(); time.Since(start) < 100*time.Microsecond; {
				}
				if err := mutex.Unlock(ctx); err != nil {
					fail(err)
				}
				return 0
			}
		})

	finish()
}

// finish prints the rows for avout-bench.
func finish() {
	out, _ := json.Marshal(map[string][]row{"rows": rows})
	fmt.Println(string(out))
}

// The isolations measured: etcd's strictest and its default.
var isolations = []struct {
	name  string
	value concurrency.Isolation
}{{"serializable", concurrency.Serializable}, {"default", concurrency.SerializableSnapshot}}

// makeKeys puts k keys under prefix/stem, each holding 1000.
func makeKeys(client *clientv3.Client, prefix, stem string, k int) []string {
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("%s%s/%d", prefix, stem, i)
		if _, err := client.Put(context.Background(), names[i], "1000"); err != nil {
			fail(err)
		}
	}
	return names
}

// readWrite records, per isolation and k = 1, 2, 4, 8, n STM transactions that add 1 to
// each of k keys.
func readWrite(client *clientv3.Client, prefix string, n int) {
	for _, isolation := range isolations {
		for _, k := range []int{1, 2, 4, 8} {
			names := makeKeys(client, prefix, fmt.Sprintf("rw-%s-%d", isolation.name, k), k)
			retries := 0
			latencies := timeEach(n, func() {
				retries += stm(client, isolation.value, func(s concurrency.STM) error {
					for _, name := range names {
						add(s, name, 1)
					}
					return nil
				})
			})
			record(fmt.Sprintf("read-write txn, k=%d: etcd STM %s", k, isolation.name), latencies, 0, retries)
		}
	}
}

// readOnly records, per isolation, n STM transactions that read 8 keys.
func readOnly(keys func(stem string, k int) []string, client *clientv3.Client, n int) {
	for _, isolation := range isolations {
		names := keys("ro-"+isolation.name, 8)
		latencies := timeEach(n, func() {
			stm(client, isolation.value, func(s concurrency.STM) error {
				for _, name := range names {
					s.Get(name)
				}
				return nil
			})
		})
		record("read-only txn, k=8: etcd STM "+isolation.name, latencies, 0, 0)
	}
}

// readManyWriteOne records, per isolation, n STM transactions that read 100 keys (all in one
// round trip, as the first Get of an STM prefetches every key it names) and add 1 to the first:
// the read set a serializable commit checks.
func readManyWriteOne(keys func(stem string, k int) []string, client *clientv3.Client, n int) {
	for _, isolation := range isolations {
		names := keys("read100-"+isolation.name, 100)
		retries := 0
		latencies := timeEach(n, func() {
			retries += stm(client, isolation.value, func(s concurrency.STM) error {
				s.Get(names...) // every key in one round trip; each Get below reads its value
				for _, name := range names {
					s.Get(name)
				}
				add(s, names[0], 1)
				return nil
			})
		})
		record("read 100 refs, write 1: etcd STM "+isolation.name, latencies, 0, retries)
	}
}
