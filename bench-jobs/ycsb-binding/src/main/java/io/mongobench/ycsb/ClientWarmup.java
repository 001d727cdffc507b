package io.mongobench.ycsb;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import org.bson.Document;

/**
 * Reads before a thread's measured phase, in the same process and over the same connection pool,
 * so that the phase does not open with the start of the JVM's compiled code, of the pool's
 * connections and of the server's per-connection state.
 *
 * <p>A trial is a new process: its first seconds are slower than the rest (in the demo, 3 to 6 s
 * of a 25-s window on FerretDB's PostgreSQL backend, a new connection to each), and the step's
 * steadiness check finds them as a warm-up. A spec's {@code warmup} step runs in a process of its
 * own and cannot warm this one. These reads run inside {@code init()}, before the start gate:
 * YCSB measures only the operations of its workload loop, the measured window starts at the
 * first of them ({@link PhaseDeadline}) and no status line counts these. They only read: a
 * document at or after a random key, so a real document is decoded as the workload's reads do.
 */
final class ClientWarmup {
  /** Seconds of reads per thread before the measured phase (the runner's run.warmupSeconds). */
  static final String SECONDS = "mongobench.warmupseconds";

  private ClientWarmup() {}

  /** How long to warm, in microseconds; 0 when absent. */
  static long micros(String value) {
    if (value == null || value.isBlank()) {
      return 0;
    }
    double seconds = Double.parseDouble(value.trim());
    if (seconds < 0 || Double.isNaN(seconds)) {
      throw new IllegalArgumentException(SECONDS + " must be 0 or more, not " + value);
    }
    return (long) (seconds * 1_000_000L);
  }

  /** Reads until {@code micros} have passed; returns how many it made. */
  static long run(MongoCollection<Document> collection, long micros, LongSupplier nowMicros) {
    if (micros <= 0) {
      return 0;
    }
    long until = nowMicros.getAsLong() + micros;
    long reads = 0;
    while (nowMicros.getAsLong() < until) {
      String from = "user" + ThreadLocalRandom.current().nextLong(Long.MAX_VALUE);
      collection.find(Filters.gte("_id", from)).limit(1).first();
      reads++;
    }
    return reads;
  }
}
