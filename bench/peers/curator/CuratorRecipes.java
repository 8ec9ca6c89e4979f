// curator-recipes: Curator's semaphore, leader latch and queues on the ZooKeeper avout-bench
// uses, beside avout's recipe rows (bench/recipe_workloads.cpp), printed as CuratorPeer's JSON
// rows. Compiled with CuratorPeer.java (its timing and row helpers) by avout-bench.
// Usage: java CuratorRecipes HOST:PORT ITERATIONS WARMUP_MS SESSION_TIMEOUT_MS HANDOVERS
//        java CuratorRecipes HOST:PORT lead PATH SESSION_TIMEOUT_MS   (a hand-over's leader:
//        prints "leading" once its LeaderLatch leads, then waits to be killed)
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;

public final class CuratorRecipes {
  /** Permits of the contended semaphore rows, as avout's. */
  private static final int permits = 3;

  // The leader of one hand-over, in a JVM of its own so that it can be killed (SIGKILL).
  private static void lead(String path) throws Exception {
    CuratorFramework client = CuratorPeer.connect();
    LeaderLatch latch = new LeaderLatch(client, path, "leader");
    latch.start();
    latch.await();
    System.out.println("leading");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);  // killed here
  }

  // One hand-over: a leader in a child JVM, a follower here; ms from the leader's SIGKILL
  // (Process.destroyForcibly) to the follower's await() returning.
  private static double handOver(CuratorFramework follower, String path) throws Exception {
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    Process leader = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "CuratorRecipes",
        CuratorPeer.hosts, "lead", path, Integer.toString(CuratorPeer.sessionTimeoutMs))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(leader.getInputStream(), StandardCharsets.UTF_8));
      if (!"leading".equals(out.readLine())) throw new IllegalStateException("the hand-over's leader did not lead");
      LeaderLatch latch = new LeaderLatch(follower, path, "follower");
      latch.start();
      Thread.sleep(500);  // the follower queued behind the leader
      if (latch.hasLeadership()) throw new IllegalStateException("the follower led before the kill");
      long killed = System.nanoTime();
      leader.destroyForcibly();
      latch.await();
      double ms = (System.nanoTime() - killed) / 1e6;
      latch.close();
      return ms;
    } finally {
      leader.destroyForcibly();
      leader.waitFor();
    }
  }

  // A row of hand-overs: p50 and the longest (as p99), every one in latencies_ms.
  private static void recordHandOvers(String workload, List<Double> handOvers) {
    List<Double> sorted = new ArrayList<>(handOvers);
    Collections.sort(sorted);
    StringBuilder each = new StringBuilder();
    for (double ms : sorted) each.append(each.length() > 0 ? "," : "").append(String.format(Locale.ROOT, "%.3f", ms));
    if (CuratorPeer.rows.length() > 0) CuratorPeer.rows.append(",");
    CuratorPeer.rows.append(String.format(Locale.ROOT,
        "{\"workload\":\"%s\",\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"operations_per_second\":0,\"retries\":0,"
            + "\"latencies_ms\":[%s]}",
        workload, sorted.get((sorted.size() - 1) / 2), sorted.get(sorted.size() - 1), each));
  }

  private static final QueueSerializer<Long> longs = new QueueSerializer<Long>() {
    @Override public byte[] serialize(Long item) { return Long.toString(item).getBytes(StandardCharsets.UTF_8); }
    @Override public Long deserialize(byte[] bytes) { return Long.parseLong(new String(bytes, StandardCharsets.UTF_8)); }
  };

  public static void main(String[] arguments) throws Exception {
    CuratorPeer.hosts = arguments[0];
    if (arguments[1].equals("lead")) {
      CuratorPeer.sessionTimeoutMs = Integer.parseInt(arguments[3]);
      lead(arguments[2]);
      return;
    }
    int n = Integer.parseInt(arguments[1]);
    long warmUpMillis = Long.parseLong(arguments[2]);
    CuratorPeer.sessionTimeoutMs = Integer.parseInt(arguments[3]);
    int handOvers = Integer.parseInt(arguments[4]);
    String root = "/bench-curator-recipes-" + System.nanoTime();
    try (CuratorFramework client = CuratorPeer.connect()) {
      int negotiated = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
      if (negotiated != CuratorPeer.sessionTimeoutMs) {
        System.err.println("curator-recipes: session timeout " + negotiated + " ms, not the "
            + CuratorPeer.sessionTimeoutMs + " ms asked for");
      }
      // Warmed as avout-bench warms its own: this JVM compiles Curator's paths before they count.
      InterProcessSemaphoreV2 warm = new InterProcessSemaphoreV2(client, root + "/warm-up", permits);
      SimpleDistributedQueue warmQueue = new SimpleDistributedQueue(client, root + "/warm-up-queue");
      for (long start = System.nanoTime(); System.nanoTime() - start < warmUpMillis * 1_000_000L; ) {
        warm.returnLease(warm.acquire());
        warmQueue.offer(new byte[] {1});
        warmQueue.take();
      }
      InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, root + "/semaphore-alone", permits);
      CuratorPeer.alone("semaphore acquire+release, 1 process: Curator InterProcessSemaphoreV2", n, () -> {
        semaphore.returnLease(semaphore.acquire());
        return 0;
      });
      // put, then wait for the consumer to have it: with a lock path an item is removed only
      // after its consumer returned (Curator's "guaranteed delivery"), as avout's take commits.
      BlockingQueue<Long> consumed = new LinkedBlockingQueue<>();
      QueueConsumer<Long> consumer = new QueueConsumer<Long>() {
        @Override public void consumeMessage(Long item) throws Exception { consumed.put(item); }
        @Override public void stateChanged(CuratorFramework c, ConnectionState state) { }
      };
      DistributedQueue<Long> queue = QueueBuilder.builder(client, consumer, longs, root + "/queue")
          .lockPath(root + "/queue-locks").buildQueue();
      queue.start();
      long[] next = {0};
      CuratorPeer.alone("queue put+take, 1 process: Curator DistributedQueue", n, () -> {
        queue.put(next[0]++);
        consumed.take();
        return 0;
      });
      queue.close();
      SimpleDistributedQueue simple = new SimpleDistributedQueue(client, root + "/simple-queue");
      CuratorPeer.alone("queue put+take, 1 process: Curator SimpleDistributedQueue", n, () -> {
        simple.offer(new byte[] {1});
        simple.take();
        return 0;
      });
      int[] latches = {0};
      CuratorPeer.alone("leader campaign+resign, 1 process: Curator LeaderLatch", Math.max(20, n / 5), () -> {
        LeaderLatch latch = new LeaderLatch(client, root + "/latch-" + latches[0]++, "alone");
        latch.start();
        latch.await();
        latch.close();
        return 0;
      });
    }
    CuratorPeer.contended("semaphore, 10 processes, " + permits + " permits: Curator InterProcessSemaphoreV2", 10,
        Math.max(20, n / 5), (client, index) -> {
          InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, root + "/semaphore", permits);
          return () -> {
            Lease lease = semaphore.acquire();
            CuratorPeer.shortTask();
            semaphore.returnLease(lease);
            return 0;
          };
        });
    // 4 producers offer and 4 workers take, each its share: ops are the puts and the takes.
    int items = Math.max(20, n / 5);
    CuratorPeer.contended("queue, 4 producers + 4 workers: Curator SimpleDistributedQueue", 8, items,
        (client, index) -> {
          SimpleDistributedQueue shared = new SimpleDistributedQueue(client, root + "/shared-queue");
          if (index < 4) return () -> { shared.offer(new byte[] {1}); return 0; };
          return () -> { shared.take(); return 0; };
        });
    try (CuratorFramework follower = CuratorPeer.connect()) {
      List<Double> measured = new ArrayList<>();
      for (int round = 0; round < handOvers; ++round) measured.add(handOver(follower, root + "/handover-" + round));
      recordHandOvers("leader hand-over after kill -9: Curator LeaderLatch", measured);
    }
    System.out.println("{\"rows\":[" + CuratorPeer.rows + "]}");
  }
}
