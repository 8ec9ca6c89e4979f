// curator-peer: Apache Curator's recipes on the ZooKeeper avout-bench uses, on the workloads
// avout measures, printed as JSON rows ({"rows": [{"workload", "p50_ms", "p99_ms",
// "operations_per_second", "retries"}]}) that avout-bench reads. Compiled by avout-bench with
// javac against Debian's jars (libcurator-recipes-java).
// Usage: java CuratorPeer HOST:PORT ITERATIONS
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorPeer {
  /** One client's operation; returns its retries. */
  interface Operation { long run() throws Exception; }

  /** Makes the operation of client number `index` on its own connection. */
  interface PerClient { Operation make(CuratorFramework client, int index) throws Exception; }

  static String hosts;
  static final StringBuilder rows = new StringBuilder();
  /** The session timeout of the clients connect() makes (ms); 0: Curator's default. */
  static int sessionTimeoutMs = 0;

  static CuratorFramework connect() throws InterruptedException {
    CuratorFrameworkFactory.Builder builder =
        CuratorFrameworkFactory.builder().connectString(hosts).retryPolicy(new RetryNTimes(3, 100));
    if (sessionTimeoutMs > 0) builder.sessionTimeoutMs(sessionTimeoutMs);
    CuratorFramework client = builder.build();
    client.start();
    client.blockUntilConnected();
    return client;
  }

  static List<Double> timeEach(int n, Operation operation, long[] retries) throws Exception {
    List<Double> latencies = new ArrayList<>(n);
    for (int i = 0; i < n; ++i) {
      long start = System.nanoTime();
      retries[0] += operation.run();
      latencies.add((System.nanoTime() - start) / 1e6);
    }
    return latencies;
  }

  // Adds a row; wallSeconds > 0 gives throughput over the wall time, otherwise 1 / mean.
  static void record(String workload, List<Double> latencies, double wallSeconds, long retries) {
    Collections.sort(latencies);
    double total = 0;
    for (double l : latencies) total += l;
    double throughput = wallSeconds > 0 ? latencies.size() / wallSeconds : 1000 * latencies.size() / total;
    if (rows.length() > 0) rows.append(",");
    rows.append(String.format(Locale.ROOT,
        "{\"workload\":\"%s\",\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"operations_per_second\":%.2f,\"retries\":%.4f}",
        workload, latencies.get((int) (0.5 * (latencies.size() - 1))),
        latencies.get((int) (0.99 * (latencies.size() - 1))), throughput, (double) retries / latencies.size()));
  }

  static void alone(String workload, int n, Operation operation) throws Exception {
    long[] retries = {0};
    List<Double> latencies = timeEach(n, operation, retries);
    record(workload, latencies, 0, retries[0]);
  }

  // Every client on its own connection (as avout's processes have their own sessions), at once.
  // Throughput is over the window from all clients connected to the last one done, as
  // avout-bench measures its own.
  static void contended(String workload, int clients, int perClient, PerClient body) throws Exception {
    List<Double> all = Collections.synchronizedList(new ArrayList<>());
    long[] retries = {0};
    List<Thread> threads = new ArrayList<>();
    List<Exception> failures = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch ready = new CountDownLatch(clients);
    CountDownLatch gate = new CountDownLatch(1);
    for (int index = 0; index < clients; ++index) {
      final int own = index;
      Thread thread = new Thread(() -> {
        boolean counted = false;
        try (CuratorFramework client = connect()) {
          Operation operation = body.make(client, own);
          ready.countDown();
          counted = true;
          gate.await();
          long[] mine = {0};
          all.addAll(timeEach(perClient, operation, mine));
          synchronized (retries) { retries[0] += mine[0]; }
        } catch (Exception e) {
          failures.add(e);
        } finally {
          if (!counted) ready.countDown();  // a client that failed must not hold the others
        }
      });
      thread.start();
      threads.add(thread);
    }
    ready.await();
    long start = System.nanoTime();
    gate.countDown();
    for (Thread thread : threads) thread.join();
    if (!failures.isEmpty()) throw failures.get(0);
    record(workload, new ArrayList<>(all), (System.nanoTime() - start) / 1e9, retries[0]);
  }

  // About 100 microseconds of work under the lock, as avout-bench's lock workloads do.
  static void shortTask() {
    long until = System.nanoTime() + 100_000;
    while (System.nanoTime() < until) { }
  }

  private static long increment(DistributedAtomicLong counter) throws Exception {
    AtomicValue<Long> value = counter.increment();
    if (!value.succeeded()) throw new IllegalStateException("DistributedAtomicLong increment gave up");
    return value.getStats().getOptimisticTries() - 1;
  }

  public static void main(String[] arguments) throws Exception {
    hosts = arguments[0];
    int n = Integer.parseInt(arguments[1]);
    long warmUpMillis = arguments.length > 2 ? Long.parseLong(arguments[2]) : 4000;
    String root = "/bench-curator-" + System.nanoTime();
    try (CuratorFramework client = connect()) {
      // Warmed as avout-bench warms its own: this JVM compiles Curator's paths before they count.
      DistributedAtomicLong warm = new DistributedAtomicLong(client, root + "/warm-up", new RetryNTimes(100000, 0));
      InterProcessMutex warmLock = new InterProcessMutex(client, root + "/warm-up-lock");
      for (long start = System.nanoTime(); System.nanoTime() - start < warmUpMillis * 1_000_000L; ) {
        increment(warm);
        warmLock.acquire();
        warmLock.release();
      }
      // Optimistic only (no promoted lock), retried until it lands, as avout's atom swap.
      DistributedAtomicLong alone = new DistributedAtomicLong(client, root + "/counter-alone", new RetryNTimes(100000, 0));
      alone("atom increment, 1 process: Curator DistributedAtomicLong", n, () -> increment(alone));
      InterProcessMutex mutex = new InterProcessMutex(client, root + "/mutex-alone");
      alone("lock acquire+release, 1 process: Curator InterProcessMutex", n, () -> {
        mutex.acquire();
        mutex.release();
        return 0;
      });
      InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, root + "/rw-alone");
      alone("lock acquire+release, 1 process: Curator InterProcessReadWriteLock (write)", n, () -> {
        rw.writeLock().acquire();
        rw.writeLock().release();
        return 0;
      });
    }
    contended("atom increment, 8 processes: Curator DistributedAtomicLong", 8, Math.max(20, n / 4),
        (client, index) -> {
          DistributedAtomicLong counter = new DistributedAtomicLong(client, root + "/counter", new RetryNTimes(100000, 0));
          return () -> increment(counter);
        });
    int lockOperations = Math.max(20, n / 5);
    contended("lock, 10 processes, one key: Curator InterProcessMutex", 10, lockOperations, (client, index) -> {
      InterProcessMutex mutex = new InterProcessMutex(client, root + "/mutex");
      return () -> { mutex.acquire(); shortTask(); mutex.release(); return 0; };
    });
    contended("lock, 10 processes, one key: Curator InterProcessReadWriteLock (write)", 10, lockOperations,
        (client, index) -> {
          InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, root + "/rw");
          return () -> { lock.writeLock().acquire(); shortTask(); lock.writeLock().release(); return 0; };
        });
    contended("lock, 10 processes, one key: Curator InterProcessReadWriteLock (read)", 10, lockOperations,
        (client, index) -> {
          InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, root + "/rw-read");
          return () -> { lock.readLock().acquire(); shortTask(); lock.readLock().release(); return 0; };
        });
    System.out.println("{\"rows\":[" + rows + "]}");
  }
}
