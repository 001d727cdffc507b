package io.mongobench.ycsb;

import java.util.OptionalLong;
import java.util.Properties;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import site.ycsb.DB;
import site.ycsb.WorkloadException;
import site.ycsb.generator.NumberGenerator;
import site.ycsb.workloads.CoreWorkload;

/**
 * YCSB's CoreWorkload with run-phase inserts that never collide.
 *
 * <p>CoreWorkload numbers the keys a run inserts from {@code recordcount} up, in every client and
 * in every run. Parallel clients therefore insert the same keys, and a second run of an inserting
 * workload (D, E) on the same data inserts the keys the first one already did: duplicate-key
 * errors, or silent overwrites with upserts, where a single client would have inserted new
 * records.
 *
 * <p>This workload keeps CoreWorkload's view of the key space (key numbers below {@code
 * recordcount} are the loaded records; new ones count up from it, with the same distributions)
 * and maps only the new ones, when building the key name, to a range of their own:
 *
 * <pre>
 *   physical = recordcount + insertoffset + (keynum - recordcount) * clients + client
 * </pre>
 *
 * so client {@code i} of {@code n} interleaves with the others, and a run given a distinct
 * {@code mongobench.insertoffset} (the operator uses the step index) stays clear of earlier runs.
 * Reads of new keys ("latest" in D) see exactly the keys this client inserted, as with one client.
 * The load phase is unchanged.
 *
 * <p>A duration-bounded run phase ({@value PhaseDeadline#DURATION}) lasts its duration from the
 * moment its operations start, not from the JVM's thread start as YCSB's {@code maxexecutiontime}
 * does: each thread stops starting operations at its {@link PhaseDeadline} (the step's common
 * start instant plus the duration behind the start gate, else its first operation plus the
 * duration). Count-bounded phases and the load phase are unchanged.
 *
 * <p>{@code requestdistribution=permutation} (not a YCSB distribution) reads the loaded keys in a
 * seeded shuffled order ({@link Permutation}, seed {@value #PERMUTATION_SEED}, default 0), each
 * once over all clients and threads when operationcount equals recordcount: client {@code i}'s
 * slice of the order starts at {@value #OPERATION_START} (the runner sets it: the client's
 * first operation among all clients'), and its threads split the slice as YCSB's Client splits
 * the client's operations (the first {@code operationcount % threads} one more). A
 * duration-bounded run (operationcount 0) has no slices: thread {@code t} of {@code T} in client
 * {@code i} of {@code n} reads positions {@code i*T + t + k*n*T}. Past the end the order starts
 * over.
 *
 * <p>Properties: {@code mongobench.client} (0-based index, default 0), {@code mongobench.clients}
 * (default 1), {@code mongobench.insertoffset} (default 0), {@value PhaseDeadline#DURATION}
 * (seconds, default none), {@value #PERMUTATION_SEED}, {@value #OPERATION_START}.
 */
public class PartitionedInsertsWorkload extends CoreWorkload {
  public static final String CLIENT = "mongobench.client";
  public static final String CLIENTS = "mongobench.clients";
  public static final String INSERT_OFFSET = "mongobench.insertoffset";
  public static final String PERMUTATION = "permutation";
  public static final String PERMUTATION_SEED = "mongobench.permutationseed";
  public static final String OPERATION_START = "mongobench.operationstart";

  private long client;
  private long clients;
  private long insertOffset;
  private boolean transactions;
  private long durationMicros;
  // requestdistribution=permutation: the order, this client's slice, and each thread's walk.
  private Permutation permutation;
  private long firstKey;
  private long operationStart;
  private long operations;
  private final ThreadLocal<Permutation.Walk> walks = new ThreadLocal<>();
  private final LongSupplier clock;
  private final Supplier<OptionalLong> commonStart;

  public PartitionedInsertsWorkload() {
    this(OperationClock::nowMicros, StartGate::commonStart);
  }

  /** For tests: a controllable clock and start instant. */
  PartitionedInsertsWorkload(LongSupplier clock, Supplier<OptionalLong> commonStart) {
    this.clock = clock;
    this.commonStart = commonStart;
  }

  @Override
  public void init(Properties p) throws WorkloadException {
    boolean permuted = PERMUTATION.equals(p.getProperty("requestdistribution"));
    if (permuted) {
      // CoreWorkload refuses a distribution it does not know: it builds a uniform chooser,
      // which permutationChooser() then replaces.
      Properties uniform = new Properties(p);
      uniform.setProperty("requestdistribution", "uniform");
      super.init(uniform);
    } else {
      super.init(p);
    }
    clients = parse(p, CLIENTS, 1);
    client = parse(p, CLIENT, 0);
    insertOffset = parse(p, INSERT_OFFSET, 0);
    if (clients < 1 || client < 0 || client >= clients) {
      throw new WorkloadException(
          CLIENT + "=" + client + " is not in [0, " + CLIENTS + "=" + clients + ")");
    }
    if (insertOffset < 0) {
      throw new WorkloadException(INSERT_OFFSET + " must not be negative: " + insertOffset);
    }
    // The YCSB Client sets it: true for -t (run), false for -load.
    transactions = Boolean.parseBoolean(p.getProperty("dotransactions", "true"));
    try {
      durationMicros = PhaseDeadline.durationMicros(p.getProperty(PhaseDeadline.DURATION));
    } catch (NumberFormatException e) {
      throw new WorkloadException(PhaseDeadline.DURATION + ": " + e.getMessage());
    }
    if (permuted) {
      keychooser = permutationChooser(p);
    }
  }

  private NumberGenerator permutationChooser(Properties p) throws WorkloadException {
    firstKey = parse(p, "insertstart", 0);
    long count = parse(p, "insertcount", recordcount - firstKey);
    operationStart = parse(p, OPERATION_START, 0);
    operations = parse(p, "operationcount", 0);
    if (count < 1 || operationStart < 0) {
      throw new WorkloadException("requestdistribution=permutation needs loaded keys ("
          + count + ") and a non-negative " + OPERATION_START + " (" + operationStart + ")");
    }
    permutation = new Permutation(count, parse(p, PERMUTATION_SEED, 0));
    return new NumberGenerator() {
      @Override
      public Number nextValue() {
        Permutation.Walk walk = walks.get();
        if (walk == null) {
          throw new IllegalStateException("permutation: a key chosen outside a client thread");
        }
        long keynum = firstKey + walk.next();
        setLastValue(keynum);
        return keynum;
      }

      @Override
      public double mean() {
        return firstKey + (count - 1) / 2.0;
      }
    };
  }

  /** Each thread's state: its own deadline (CoreWorkload keeps none). */
  @Override
  public Object initThread(Properties p, int threadId, int threadCount) {
    if (permutation != null) {
      // YCSB calls this on the client thread itself, before its operations.
      walks.set(operations > 0
          ? new Permutation.Walk(permutation, operationStart + threadId * (operations / threadCount)
              + Math.min(threadId, operations % threadCount), 1)
          : new Permutation.Walk(permutation, client * threadCount + threadId,
              clients * threadCount));
    }
    return new PhaseDeadline(transactions ? durationMicros : 0, clock, commonStart);
  }

  /** CoreWorkload's operation, unless this thread's phase is over: false ends the thread. */
  @Override
  public boolean doTransaction(DB db, Object threadstate) {
    if (threadstate instanceof PhaseDeadline deadline && deadline.passed()) {
      return false;
    }
    return super.doTransaction(db, threadstate);
  }

  @Override
  protected String buildKeyName(long keynum) {
    return super.buildKeyName(physicalKey(keynum));
  }

  /** The key number stored for CoreWorkload's key number {@code keynum}. */
  long physicalKey(long keynum) {
    if (!transactions || keynum < recordcount) {
      return keynum;
    }
    return recordcount + insertOffset + (keynum - recordcount) * clients + client;
  }

  private static long parse(Properties p, String key, long fallback) throws WorkloadException {
    String value = p.getProperty(key);
    if (value == null || value.isBlank()) {
      return fallback;
    }
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new WorkloadException(key + " is not an integer: " + value);
    }
  }
}
