package io.mongobench.ycsb;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Projections;
import java.util.ArrayList;
import java.util.List;
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
 * first of them ({@link PhaseDeadline}) and no status line counts these. They only read, as the
 * workload's reads do: a document by its _id, among {@link #SAMPLE} keys taken from the
 * collection once.
 */
final class ClientWarmup {
  /** Seconds of reads per thread before the measured phase (the runner's run.warmupSeconds). */
  static final String SECONDS = "mongobench.warmupseconds";

  /** Keys taken from the collection for the warm-up's reads. */
  static final int SAMPLE = 100;

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
    // Real keys, taken once: the reads are then the workload's own, by _id equality. Range reads
    // (_id >= a random key) were not: FerretDB answered them on PostgreSQL by reading the whole
    // table, and the measured reads after them sped up for their first 4-6 s (the server's
    // garbage from the range reads settling), a warm-up that made trials NotSteady.
    List<Object> ids = new ArrayList<>();
    for (Document d :
        collection.find().projection(Projections.include("_id")).limit(SAMPLE)) {
      ids.add(d.get("_id"));
    }
    long reads = 0;
    while (nowMicros.getAsLong() < until) {
      if (ids.isEmpty()) {
        // An empty collection: nothing to find, still the path of a read.
        collection.find(Filters.eq("_id", "user0")).first();
      } else {
        Object id = ids.get(ThreadLocalRandom.current().nextInt(ids.size()));
        collection.find(Filters.eq("_id", id)).first();
      }
      reads++;
    }
    return reads;
  }
}
