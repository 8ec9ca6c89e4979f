// etcd's Election beside avout's recipe rows (bench/recipe_workloads.cpp): campaign+resign,
// and the hand-over after the leader's process is killed (-recipes; -lead runs that leader).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

var (
	recipes   = flag.Bool("recipes", false, "measure only the recipe rows: Election campaign+resign and hand-over")
	ttl       = flag.Int("ttl", 2, "the sessions' lease TTL (s) in the recipe rows, as avout's session timeout")
	handOvers = flag.Int("handovers", 5, "hand-overs measured, one leader process killed each")
	lead      = flag.String("lead", "", "run as a hand-over's leader of this election: print \"leading\", wait to be killed")
)

// session opens a session whose lease has the -ttl TTL.
func session(client *clientv3.Client) *concurrency.Session {
	s, err := concurrency.NewSession(client, concurrency.WithTTL(*ttl))
	if err != nil {
		fail(err)
	}
	return s
}

// leadUntilKilled is a hand-over's leader, in a process of its own so that it can be killed.
func leadUntilKilled(prefix string) {
	client := connect()
	election := concurrency.NewElection(session(client), prefix)
	if err := election.Campaign(context.Background(), "leader"); err != nil {
		fail(err)
	}
	fmt.Println("leading")
	select {} // killed here
}

// handOver runs one hand-over: a leader in a child process, a follower here; ms from the
// leader's SIGKILL to the follower's Campaign returning.
func handOver(client *clientv3.Client, prefix string) float64 {
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	leader := exec.Command(self, "-endpoint", *endpoint, "-ttl", fmt.Sprint(*ttl), "-lead", prefix)
	leader.Stderr = os.Stderr
	out, err := leader.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := leader.Start(); err != nil {
		fail(err)
	}
	defer func() { leader.Process.Kill(); leader.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "leading\n" {
		fail(fmt.Errorf("the hand-over's leader did not lead"))
	}
	own := session(client)
	defer own.Close()
	follower := concurrency.NewElection(own, prefix)
	led := make(chan time.Time, 1)
	go func() {
		if err := follower.Campaign(context.Background(), "follower"); err != nil {
			fail(err)
		}
		led <- time.Now()
	}()
	time.Sleep(500 * time.Millisecond) // the follower queued behind the leader
	select {
	case <-led:
		fail(fmt.Errorf("the follower led before the kill"))
	default:
	}
	killed := time.Now()
	if err := leader.Process.Kill(); err != nil {
		fail(err)
	}
	ms := float64((<-led).Sub(killed).Microseconds()) / 1000
	if err := follower.Resign(context.Background()); err != nil {
		fail(err)
	}
	return ms
}

// recipeRows records etcd's floor (get + put) and the Election rows.
func recipeRows(client *clientv3.Client, prefix string, n int) {
	ctx := context.Background()
	floorKey := prefix + "floor"
	record("etcd get + put", timeEach(n, func() { client.Get(ctx, floorKey); client.Put(ctx, floorKey, "2") }), 0, 0)
	own := session(client)
	election := concurrency.NewElection(own, prefix+"election-alone")
	record("leader campaign+resign, 1 process: etcd Election", timeEach(n, func() {
		if err := election.Campaign(ctx, "alone"); err != nil {
			fail(err)
		}
		if err := election.Resign(ctx); err != nil {
			fail(err)
		}
	}), 0, 0)
	own.Close()
	measured := make([]float64, 0, *handOvers)
	for round := 0; round < *handOvers; round++ {
		measured = append(measured, handOver(client, fmt.Sprintf("%shandover-%d", prefix, round)))
	}
	sort.Float64s(measured)
	rows = append(rows, row{Workload: "leader hand-over after kill -9: etcd Election",
		P50: measured[(len(measured)-1)/2], P99: measured[len(measured)-1], Latencies: measured})
}
