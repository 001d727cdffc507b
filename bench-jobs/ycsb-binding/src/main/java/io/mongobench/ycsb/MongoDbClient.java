package io.mongobench.ycsb;

import com.mongodb.MongoBulkWriteException;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.BulkWriteOptions;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.InsertManyOptions;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.ReplaceOneModel;
import com.mongodb.client.model.ReplaceOptions;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.model.WriteModel;
import com.mongodb.client.result.DeleteResult;
import com.mongodb.client.result.UpdateResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.bson.types.Binary;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding for MongoDB on the synchronous Java driver 5.x.
 *
 * <p>YCSB creates one instance per client thread; all instances of a process share one {@link
 * MongoClient} (and so one connection pool), as the upstream binding does. Records are documents
 * {@code {_id: key, field0: BinData, ...}}. Configuration is read from YCSB properties; see {@link
 * BindingConfig} for the names.
 *
 * <p>Failures that YCSB itself would swallow (an exception from {@code init()} or {@code
 * cleanup()} only ends the thread quietly) are printed to stderr on a line starting with {@value
 * #ERROR_MARKER} so that the mongobench runner can fail the run with the message.
 */
public class MongoDbClient extends DB {
  /** Prefix of stderr lines the runner treats as a failed run. */
  public static final String ERROR_MARKER = "MONGOBENCH_BINDING_ERROR";

  /** Prefix of stderr lines describing individual failed operations (the first few only). */
  public static final String OP_ERROR_MARKER = "MONGOBENCH_BINDING_OP_ERROR";

  private static final int MAX_LOGGED_OP_ERRORS = 20;

  private static final Object LOCK = new Object();
  private static final AtomicInteger LOGGED_OP_ERRORS = new AtomicInteger();
  private static MongoClient sharedClient;
  private static BindingConfig sharedConfig;
  private static int references;

  private MongoCollection<Document> collection;
  private String collectionName;
  private BindingConfig config;
  private final List<Document> batch = new ArrayList<>();
  private final OperationClock clock = new OperationClock();

  @Override
  public void init() throws DBException {
    synchronized (LOCK) {
      try {
        if (sharedClient == null) {
          BindingConfig cfg = BindingConfig.from(getProperties(), System.getenv());
          MongoClient client = MongoClients.create(cfg.clientSettings());
          try {
            // Fail fast and loudly on a wrong URI, credentials or TLS setup instead of one error
            // per operation.
            client.getDatabase(cfg.database()).runCommand(new Document("ping", 1));
          } catch (RuntimeException e) {
            client.close();
            throw e;
          }
          sharedClient = client;
          sharedConfig = cfg;
        }
        references++;
        config = sharedConfig;
      } catch (RuntimeException e) {
        String msg = ERROR_MARKER + " init failed: " + describe(e);
        System.err.println(msg);
        throw new DBException(msg, e);
      }
    }
    // Outside the lock: each thread warms up (unmeasured), then every thread of the process
    // waits here for the step's common start.
    try {
      long warmup = ClientWarmup.micros(getProperties().getProperty(ClientWarmup.SECONDS));
      if (warmup > 0) {
        String table = getProperties().getProperty("table", "usertable");
        ClientWarmup.run(collection(table), warmup, OperationClock::nowMicros);
      }
      StartGate.await(getProperties());
    } catch (DBException | RuntimeException e) {
      String msg = ERROR_MARKER + " " + e.getMessage();
      System.err.println(msg);
      throw new DBException(msg, e);
    }
  }

  @Override
  public void cleanup() throws DBException {
    DBException failure = null;
    try {
      if (!batch.isEmpty()) {
        long t0 = OperationClock.nowMicros();
        Status flushed = flushBatch();
        clock.record(t0, OperationClock.nowMicros());
        if (flushed != Status.OK) {
          failure = new DBException("final insert batch failed");
        }
      }
    } finally {
      clock.merge();
      synchronized (LOCK) {
        references--;
        if (references <= 0 && sharedClient != null) {
          // The last thread: report when this process's operations ran (the measured window).
          System.err.println(OperationClock.report());
          OperationClock.reset();
          sharedClient.close();
          sharedClient = null;
          sharedConfig = null;
          references = 0;
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  private MongoCollection<Document> collection(String table) {
    if (collection == null || !table.equals(collectionName)) {
      MongoDatabase db = sharedClientFor().getDatabase(config.database());
      MongoCollection<Document> c = db.getCollection(table);
      if (config.writeConcern() != null) {
        c = c.withWriteConcern(config.writeConcern());
      }
      if (config.readPreference() != null) {
        c = c.withReadPreference(config.readPreference());
      }
      collection = c;
      collectionName = table;
    }
    return collection;
  }

  private static MongoClient sharedClientFor() {
    synchronized (LOCK) {
      if (sharedClient == null) {
        throw new IllegalStateException("MongoDbClient used before init() or after cleanup()");
      }
      return sharedClient;
    }
  }

  @Override
  public Status read(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    long t0 = OperationClock.nowMicros();
    try {
      return readOp(table, key, fields, result);
    } finally {
      clock.record(t0, OperationClock.nowMicros());
    }
  }

  private Status readOp(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      var find = collection(table).find(Filters.eq("_id", key));
      Bson projection = projection(fields);
      if (projection != null) {
        find = find.projection(projection);
      }
      Document doc = find.first();
      if (doc == null) {
        return Status.NOT_FOUND;
      }
      fill(doc, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("read", key, e);
    }
  }

  @Override
  public Status scan(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    long t0 = OperationClock.nowMicros();
    try {
      return scanOp(table, startkey, recordcount, fields, result);
    } finally {
      clock.record(t0, OperationClock.nowMicros());
    }
  }

  private Status scanOp(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      var find =
          collection(table)
              .find(Filters.gte("_id", startkey))
              .sort(Sorts.ascending("_id"))
              .limit(recordcount)
              .batchSize(Math.max(recordcount, 1));
      Bson projection = projection(fields);
      if (projection != null) {
        find = find.projection(projection);
      }
      int n = 0;
      try (MongoCursor<Document> cursor = find.iterator()) {
        while (cursor.hasNext()) {
          HashMap<String, ByteIterator> row = new HashMap<>();
          fill(cursor.next(), row);
          result.add(row);
          n++;
        }
      }
      return n == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (RuntimeException e) {
      return failed("scan", startkey, e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    long t0 = OperationClock.nowMicros();
    try {
      return updateOp(table, key, values);
    } finally {
      clock.record(t0, OperationClock.nowMicros());
    }
  }

  private Status updateOp(String table, String key, Map<String, ByteIterator> values) {
    try {
      Document set = new Document();
      for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
        set.append(e.getKey(), new Binary(e.getValue().toArray()));
      }
      UpdateResult r =
          collection(table).updateOne(Filters.eq("_id", key), new Document("$set", set));
      if (r.wasAcknowledged() && r.getMatchedCount() == 0) {
        return Status.NOT_FOUND;
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    long t0 = OperationClock.nowMicros();
    try {
      return insertOp(table, key, values);
    } finally {
      clock.record(t0, OperationClock.nowMicros());
    }
  }

  private Status insertOp(String table, String key, Map<String, ByteIterator> values) {
    try {
      Document doc = new Document("_id", key);
      for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
        doc.append(e.getKey(), new Binary(e.getValue().toArray()));
      }
      MongoCollection<Document> c = collection(table);
      if (config.batchSize() <= 1) {
        if (config.upsert()) {
          c.replaceOne(Filters.eq("_id", key), doc, new ReplaceOptions().upsert(true));
        } else {
          c.insertOne(doc);
        }
        return Status.OK;
      }
      batch.add(doc);
      if (batch.size() < config.batchSize()) {
        return Status.BATCHED_OK;
      }
      return flushBatch();
    } catch (RuntimeException e) {
      return failed("insert", key, e);
    }
  }

  /** Writes the pending batch; OK or ERROR. The batch is emptied either way. */
  private Status flushBatch() {
    List<Document> docs = new ArrayList<>(batch);
    batch.clear();
    try {
      MongoCollection<Document> c = collection(collectionName);
      if (config.upsert()) {
        List<WriteModel<Document>> ops = new ArrayList<>(docs.size());
        for (Document d : docs) {
          ops.add(
              new ReplaceOneModel<>(
                  Filters.eq("_id", d.get("_id")), d, new ReplaceOptions().upsert(true)));
        }
        c.bulkWrite(ops, new BulkWriteOptions().ordered(false));
      } else {
        c.insertMany(docs, new InsertManyOptions().ordered(false));
      }
      return Status.OK;
    } catch (MongoBulkWriteException e) {
      System.err.println(
          ERROR_MARKER
              + " batch insert: "
              + e.getWriteErrors().size()
              + " of "
              + docs.size()
              + " documents failed: "
              + describe(e));
      return Status.ERROR;
    } catch (RuntimeException e) {
      System.err.println(
          ERROR_MARKER + " batch insert of " + docs.size() + " documents failed: " + describe(e));
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    long t0 = OperationClock.nowMicros();
    try {
      return deleteOp(table, key);
    } finally {
      clock.record(t0, OperationClock.nowMicros());
    }
  }

  private Status deleteOp(String table, String key) {
    try {
      DeleteResult r = collection(table).deleteOne(Filters.eq("_id", key));
      if (r.wasAcknowledged() && r.getDeletedCount() == 0) {
        return Status.NOT_FOUND;
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("delete", key, e);
    }
  }

  static Bson projection(Set<String> fields) {
    if (fields == null) {
      return null;
    }
    return Projections.include(new ArrayList<>(fields));
  }

  static void fill(Document doc, Map<String, ByteIterator> out) {
    for (Map.Entry<String, Object> e : doc.entrySet()) {
      if ("_id".equals(e.getKey())) {
        continue;
      }
      Object v = e.getValue();
      if (v instanceof Binary b) {
        out.put(e.getKey(), new ByteArrayByteIterator(b.getData()));
      } else if (v instanceof byte[] bytes) {
        out.put(e.getKey(), new ByteArrayByteIterator(bytes));
      } else if (v != null) {
        out.put(
            e.getKey(),
            new ByteArrayByteIterator(
                v.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      }
    }
  }

  private static Status failed(String op, String key, RuntimeException e) {
    if (LOGGED_OP_ERRORS.incrementAndGet() <= MAX_LOGGED_OP_ERRORS) {
      System.err.println(OP_ERROR_MARKER + " " + op + " " + key + ": " + describe(e));
    }
    return Status.ERROR;
  }

  static String describe(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m.replace('\n', ' '));
  }

  /** For tests: the settings the shared client was created with (null when not connected). */
  static BindingConfig activeConfig() {
    synchronized (LOCK) {
      return sharedConfig;
    }
  }

  /** For tests: how many binding instances share the client. */
  static int activeReferences() {
    synchronized (LOCK) {
      return references;
    }
  }
}
