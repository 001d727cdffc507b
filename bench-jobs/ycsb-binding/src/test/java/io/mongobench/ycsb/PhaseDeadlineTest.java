package io.mongobench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ByteIterator;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;

/**
 * A duration-bounded run phase lasts its duration from the moment its operations start, for every
 * thread, however long the thread's init() and the start gate took (unit tier: a controllable
 * clock for the exact instants; YCSB's own ClientThread with the real start gate for the
 * sub-second end-to-end check).
 */
class PhaseDeadlineTest {
  private static final long S = 1_000_000L; // one second in microseconds

  @TempDir Path dir;

  @BeforeEach
  @AfterEach
  void fresh() {
    StartGate.reset();
  }

  /** Gated: a thread whose start-up took 7 s (longer than the 5 s duration) still runs 5 s. */
  @Test
  void behindTheGateEveryThreadEndsAtTheCommonStartPlusTheDuration() {
    AtomicLong now = new AtomicLong();
    long start = 8 * S; // the JVM's threads started at 0; the slowest was ready at 7 s
    PhaseDeadline prompt = new PhaseDeadline(5 * S, now::get, () -> OptionalLong.of(start));
    PhaseDeadline late = new PhaseDeadline(5 * S, now::get, () -> OptionalLong.of(start));
    now.set(start);
    assertFalse(prompt.passed());
    now.set(start + 2 * S); // a thread descheduled past the start: it does not run 2 s over
    assertFalse(late.passed());
    for (PhaseDeadline d : List.of(prompt, late)) {
      assertEquals(start + 5 * S, d.deadline().getAsLong());
      now.set(start + 5 * S - 1);
      assertFalse(d.passed());
      now.set(start + 5 * S);
      assertTrue(d.passed());
    }
  }

  /** No gate: each thread's phase starts at its own first operation. */
  @Test
  void withoutTheGateAThreadsPhaseStartsAtItsFirstOperation() {
    AtomicLong now = new AtomicLong(1 * S);
    PhaseDeadline quick = new PhaseDeadline(5 * S, now::get, OptionalLong::empty);
    assertFalse(quick.passed());
    now.set(7 * S); // this thread's init() took 7 s; YCSB's timer would have ended at 5 s
    PhaseDeadline slow = new PhaseDeadline(5 * S, now::get, OptionalLong::empty);
    assertFalse(slow.passed());
    assertTrue(quick.passed()); // 1 s + 5 s is over
    now.set(12 * S - 1);
    assertFalse(slow.passed());
    now.set(12 * S);
    assertTrue(slow.passed());
  }

  @Test
  void withoutADurationTheClockIsNeverRead() {
    PhaseDeadline none =
        new PhaseDeadline(
            0,
            () -> {
              throw new AssertionError("clock read");
            },
            () -> {
              throw new AssertionError("gate read");
            });
    assertFalse(none.passed());
    assertTrue(none.deadline().isEmpty());
  }

  @Test
  void durationsInWholeOrFractionalSeconds() {
    assertEquals(0, PhaseDeadline.durationMicros(null));
    assertEquals(0, PhaseDeadline.durationMicros(" "));
    assertEquals(30 * S, PhaseDeadline.durationMicros("30"));
    assertEquals(1_500_000, PhaseDeadline.durationMicros("1.5"));
    assertThrows(NumberFormatException.class, () -> PhaseDeadline.durationMicros("-1"));
    assertThrows(NumberFormatException.class, () -> PhaseDeadline.durationMicros("NaN"));
    assertThrows(NumberFormatException.class, () -> PhaseDeadline.durationMicros("soon"));
  }

  // --- the workload: each operation moves a controllable clock by 1 ms ---

  private static Properties props(Map<String, String> extra) {
    Properties p = new Properties();
    p.setProperty("recordcount", "100");
    p.setProperty("operationcount", "1000000");
    p.setProperty("readproportion", "1");
    p.setProperty("updateproportion", "0");
    p.setProperty("fieldcount", "1");
    p.setProperty("dotransactions", "true");
    p.putAll(extra);
    Measurements.setProperties(p); // CoreWorkload's constructor reads them, as in the Client
    return p;
  }

  private static PartitionedInsertsWorkload workload(
      Map<String, String> extra, AtomicLong now, OptionalLong start) throws WorkloadException {
    PartitionedInsertsWorkload w = new PartitionedInsertsWorkload(now::get, () -> start);
    w.init(props(extra));
    return w;
  }

  /** A database each of whose operations takes 1 ms of a controllable clock. */
  static final class TickingDb extends DB {
    private final AtomicLong now;

    TickingDb(AtomicLong now) {
      this.now = now;
    }

    private Status tick() {
      now.addAndGet(1_000);
      return Status.OK;
    }

    @Override
    public Status read(String t, String key, Set<String> f, Map<String, ByteIterator> r) {
      return tick();
    }

    @Override
    public Status scan(
        String t, String k, int n, Set<String> f, Vector<HashMap<String, ByteIterator>> r) {
      return tick();
    }

    @Override
    public Status update(String t, String key, Map<String, ByteIterator> v) {
      return tick();
    }

    @Override
    public Status insert(String t, String key, Map<String, ByteIterator> v) {
      return tick();
    }

    @Override
    public Status delete(String t, String key) {
      return tick();
    }
  }

  /** Runs one thread's loop as ClientThread does: until the workload says stop, or `limit`. */
  private static int operations(PartitionedInsertsWorkload w, AtomicLong now, int limit) {
    DB db = new TickingDb(now);
    Object state = w.initThread(new Properties(), 0, 1);
    int done = 0;
    while (done < limit && w.doTransaction(db, state)) {
      done++;
    }
    return done;
  }

  @Test
  void theWorkloadEndsAThreadAtItsDeadlineAndAGatedLateThreadAtTheCommonEnd() throws Exception {
    AtomicLong now = new AtomicLong(10 * S);
    Map<String, String> half = Map.of(PhaseDeadline.DURATION, "0.5");
    assertEquals(500, operations(workload(half, now, OptionalLong.empty()), now, 10_000));
    now.set(20 * S + 200_000); // gated at 20 s, this thread's first operation 200 ms late
    assertEquals(300, operations(workload(half, now, OptionalLong.of(20 * S)), now, 10_000));
  }

  @Test
  void countBoundedAndLoadPhasesIgnoreTheClock() throws Exception {
    AtomicLong now = new AtomicLong(10 * S);
    assertEquals(2_000, operations(workload(Map.of(), now, OptionalLong.empty()), now, 2_000));
    // A duration given to the load phase does not stop its inserts (YCSB's count does).
    PartitionedInsertsWorkload load =
        workload(
            Map.of(PhaseDeadline.DURATION, "0.01", "dotransactions", "false"),
            now,
            OptionalLong.empty());
    DB db = new TickingDb(now);
    Object state = load.initThread(new Properties(), 0, 1);
    for (int i = 0; i < 100; i++) { // 100 ms of inserts against a 10 ms duration
      assertTrue(load.doInsert(db, state));
    }
    assertFalse(state instanceof PhaseDeadline d && d.passed());
    assertThrows(
        WorkloadException.class,
        () -> workload(Map.of(PhaseDeadline.DURATION, "x"), now, OptionalLong.empty()));
  }

  // --- YCSB's own ClientThread, the real start gate and clock, sub-second ---

  /** A database whose init() takes a given time before the start gate; operations take ~2 ms. */
  static final class SlowStartDb extends DB {
    final long initMs;
    final List<long[]> ops = new ArrayList<>(); // {start, end} epoch microseconds

    SlowStartDb(long initMs) {
      this.initMs = initMs;
    }

    @Override
    public void init() throws DBException {
      try {
        Thread.sleep(initMs);
      } catch (InterruptedException e) {
        throw new DBException(e);
      }
      StartGate.await(getProperties());
    }

    @Override
    public Status read(String t, String key, Set<String> f, Map<String, ByteIterator> r) {
      long t0 = OperationClock.nowMicros();
      try {
        TimeUnit.MILLISECONDS.sleep(2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      ops.add(new long[] {t0, OperationClock.nowMicros()});
      return Status.OK;
    }

    @Override
    public Status scan(
        String t, String k, int n, Set<String> f, Vector<HashMap<String, ByteIterator>> r) {
      return Status.OK;
    }

    @Override
    public Status update(String t, String key, Map<String, ByteIterator> v) {
      return Status.OK;
    }

    @Override
    public Status insert(String t, String key, Map<String, ByteIterator> v) {
      return Status.OK;
    }

    @Override
    public Status delete(String t, String key) {
      return Status.OK;
    }
  }

  private List<SlowStartDb> runThreads(Properties p, long[] initMs, Runnable runnerSide)
      throws Exception {
    PartitionedInsertsWorkload w = new PartitionedInsertsWorkload();
    w.init(p);
    CountDownLatch done = new CountDownLatch(initMs.length);
    List<SlowStartDb> dbs = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < initMs.length; i++) {
      SlowStartDb db = new SlowStartDb(initMs[i]);
      db.setProperties(p);
      ClientThread ct = new ClientThread(db, true, w, p, Integer.MAX_VALUE / 4, 0, done);
      ct.setThreadId(i);
      ct.setThreadCount(initMs.length);
      Thread t = new Thread(ct);
      t.start();
      dbs.add(db);
      threads.add(t);
    }
    runnerSide.run();
    assertTrue(done.await(20, TimeUnit.SECONDS), "YCSB threads did not end");
    for (Thread t : threads) {
      t.join(5_000);
    }
    return dbs;
  }

  // Scheduling on a shared 2-core machine: a sleeping thread may wake this late.
  private static final long TOLERANCE_US = 250_000;

  @Test
  void ycsbThreadsBehindTheGateAllRunFromTheStartInstantToItsEnd() throws Exception {
    Properties p = props(Map.of(PhaseDeadline.DURATION, "1", "threadcount", "3"));
    p.setProperty(StartGate.READY, dir.resolve("ready").toString());
    p.setProperty(StartGate.START, dir.resolve("start").toString());
    long[] startUs = new long[1];
    Runnable runner =
        () -> { // the runner's side: the start instant 300 ms after the last thread was ready
          try {
            Path ready = dir.resolve("ready");
            long until = System.nanoTime() + 10_000_000_000L;
            while (!Files.exists(ready) && System.nanoTime() < until) {
              Thread.sleep(5);
            }
            startUs[0] = Long.parseLong(Files.readString(ready).trim()) + 300_000;
            StartGate.writeAtomically(dir.resolve("start"), Long.toString(startUs[0]));
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        };
    // The last thread's init() takes 1.2 s: more than the duration, all before the start.
    List<SlowStartDb> dbs = runThreads(p, new long[] {0, 400, 1_200}, runner);
    long end = startUs[0] + 1_000_000;
    for (SlowStartDb db : dbs) {
      assertFalse(db.ops.isEmpty(), "a thread ran no operation (init " + db.initMs + " ms)");
      long firstStart = db.ops.get(0)[0];
      long[] last = db.ops.get(db.ops.size() - 1);
      assertTrue(firstStart >= startUs[0], "began " + (startUs[0] - firstStart) + " us early");
      assertTrue(last[0] < end, "an operation began " + (last[0] - end) + " us after the end");
      assertTrue(last[1] <= end + TOLERANCE_US, "ended " + (last[1] - end) + " us late");
      assertTrue(
          last[1] >= end - TOLERANCE_US,
          "thread with init " + db.initMs + " ms stopped " + (end - last[1]) + " us early");
    }
  }

  @Test
  void ycsbThreadsWithoutTheGateEachRunTheDurationFromTheirFirstOperation() throws Exception {
    Properties p = props(Map.of(PhaseDeadline.DURATION, "0.6", "threadcount", "2"));
    List<SlowStartDb> dbs = runThreads(p, new long[] {0, 700}, () -> {});
    for (SlowStartDb db : dbs) {
      long first = db.ops.get(0)[0];
      long end = first + 600_000;
      long[] last = db.ops.get(db.ops.size() - 1);
      assertTrue(last[0] < end, "an operation began " + (last[0] - end) + " us after the end");
      assertTrue(last[1] >= end - TOLERANCE_US, "init " + db.initMs + " ms: stopped early");
      assertTrue(last[1] <= end + TOLERANCE_US, "init " + db.initMs + " ms: ended late");
    }
    // The slow thread's phase ends later than the quick one's: its own start, its own end.
    long quickEnd = dbs.get(0).ops.get(dbs.get(0).ops.size() - 1)[1];
    long slowEnd = dbs.get(1).ops.get(dbs.get(1).ops.size() - 1)[1];
    assertTrue(slowEnd - quickEnd > 300_000, "ends " + (slowEnd - quickEnd) + " us apart");
  }
}
