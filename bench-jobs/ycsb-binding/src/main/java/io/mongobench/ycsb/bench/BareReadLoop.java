package io.mongobench.ycsb.bench;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.bson.Document;
import site.ycsb.Utils;

/**
 * The baseline for `make bench-clients`: the bare Java driver reading YCSB's keys in a loop, no
 * YCSB machinery. Usage: BareReadLoop URI DATABASE RECORDS OPERATIONS THREADS; prints one JSON
 * line {"operations": n, "errors": e, "seconds": s}.
 */
public final class BareReadLoop {
  private BareReadLoop() {}

  public static void main(String[] args) throws InterruptedException {
    String uri = args[0];
    String database = args[1];
    long records = Long.parseLong(args[2]);
    long operations = Long.parseLong(args[3]);
    int threads = Integer.parseInt(args[4]);
    AtomicLong issued = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    try (MongoClient client = MongoClients.create(uri)) {
      MongoCollection<Document> coll = client.getDatabase(database).getCollection("usertable");
      long start = System.nanoTime();
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Thread w = new Thread(() -> {
          while (issued.incrementAndGet() <= operations) {
            long keynum = ThreadLocalRandom.current().nextLong(records);
            String key = "user" + Utils.hash(keynum);
            if (coll.find(Filters.eq("_id", key)).first() == null) {
              errors.incrementAndGet();
            }
          }
        });
        w.start();
        workers.add(w);
      }
      for (Thread w : workers) {
        w.join();
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      System.out.println("{\"operations\": " + operations + ", \"errors\": " + errors.get()
          + ", \"seconds\": " + seconds + "}");
    }
  }
}
