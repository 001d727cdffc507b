package io.mongobench.ycsb;

import java.time.Instant;

/**
 * When this client's operations really ran: the start of its first and the end of its last
 * operation, in microseconds since the epoch.
 *
 * <p>YCSB's own RunTime starts before the client threads and includes every thread's {@code
 * DB.init()} (connecting, the start gate), so a throughput over it is biased low and a window
 * built from it overlaps other clients' start-up. The runner takes the step's measured window from
 * these timestamps instead. Each binding instance (one per YCSB thread) keeps its own pair, so
 * recording costs no shared write; {@link #merge} folds an instance's pair in at cleanup.
 */
final class OperationClock {
  /** Prefix of the stderr line that reports the process's operation span to the runner. */
  static final String TIMING_MARKER = "MONGOBENCH_BINDING_TIMING";

  private static final Object LOCK = new Object();
  private static long first = Long.MAX_VALUE;
  private static long last = Long.MIN_VALUE;

  private long threadFirst = Long.MAX_VALUE;
  private long threadLast = Long.MIN_VALUE;

  static long nowMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  /** One operation of this thread ran from {@code start} to {@code end} (epoch microseconds). */
  void record(long start, long end) {
    if (start < threadFirst) {
      threadFirst = start;
    }
    if (end > threadLast) {
      threadLast = end;
    }
  }

  /** Folds this thread's span into the process's (at the thread's cleanup). */
  void merge() {
    synchronized (LOCK) {
      first = Math.min(first, threadFirst);
      last = Math.max(last, threadLast);
    }
  }

  /** The report line: {"firstOpStartUs": n, "lastOpEndUs": n}, or nulls when nothing ran. */
  static String report() {
    synchronized (LOCK) {
      boolean ran = first != Long.MAX_VALUE;
      return TIMING_MARKER
          + " {\"firstOpStartUs\": "
          + (ran ? Long.toString(first) : "null")
          + ", \"lastOpEndUs\": "
          + (ran ? Long.toString(last) : "null")
          + "}";
    }
  }

  /** For tests and a reused JVM: forget the process's span. */
  static void reset() {
    synchronized (LOCK) {
      first = Long.MAX_VALUE;
      last = Long.MIN_VALUE;
    }
  }
}
