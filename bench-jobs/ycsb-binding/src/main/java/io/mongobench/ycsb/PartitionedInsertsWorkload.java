package io.mongobench.ycsb;

import java.util.OptionalLong;
import java.util.Properties;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import site.ycsb.DB;
import site.ycsb.WorkloadException;
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
 * <p>Properties: {@code mongobench.client} (0-based index, default 0), {@code mongobench.clients}
 * (default 1), {@code mongobench.insertoffset} (default 0), {@value PhaseDeadline#DURATION}
 * (seconds, default none).
 */
public class PartitionedInsertsWorkload extends CoreWorkload {
  public static final String CLIENT = "mongobench.client";
  public static final String CLIENTS = "mongobench.clients";
  public static final String INSERT_OFFSET = "mongobench.insertoffset";

  private long client;
  private long clients;
  private long insertOffset;
  private boolean transactions;
  private long durationMicros;
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
    super.init(p);
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
  }

  /** Each thread's state: its own deadline (CoreWorkload keeps none). */
  @Override
  public Object initThread(Properties p, int threadId, int threadCount) {
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
