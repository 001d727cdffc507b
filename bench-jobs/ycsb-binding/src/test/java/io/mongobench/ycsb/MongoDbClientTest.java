package io.mongobench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import org.bson.BsonDocument;
import org.bson.BsonValue;
import org.bson.Document;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * The binding's operations against a real MongoDB wire server in-process (mongo-java-server, an
 * in-memory implementation): every YCSB operation, field sets, batching, upsert, failures.
 */
class MongoDbClientTest {
  private static final String TABLE = "usertable";

  private MongoServer server;
  private String uri;
  private final List<MongoDbClient> open = new ArrayList<>();

  @BeforeEach
  void start() {
    server = new MongoServer(new MemoryBackend());
    InetSocketAddress addr = server.bind();
    uri = "mongodb://127.0.0.1:" + addr.getPort() + "/ycsbtest";
  }

  @AfterEach
  void stop() throws DBException {
    for (MongoDbClient c : open) {
      c.cleanup();
    }
    open.clear();
    server.shutdownNow();
  }

  private MongoDbClient client(Map<String, String> extra) throws DBException {
    Properties p = new Properties();
    p.setProperty("mongodb.url", uri);
    p.putAll(extra);
    MongoDbClient c = new MongoDbClient();
    c.setProperties(p);
    c.init();
    open.add(c);
    return c;
  }

  private MongoCollection<Document> raw(MongoClient mc) {
    return mc.getDatabase("ycsbtest").getCollection(TABLE);
  }

  private static Map<String, ByteIterator> record(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return StringByteIterator.getByteIteratorMap(m);
  }

  private static Map<String, String> strings(Map<String, ByteIterator> m) {
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, ByteIterator> e : m.entrySet()) {
      out.put(e.getKey(), new String(e.getValue().toArray(), StandardCharsets.UTF_8));
    }
    return out;
  }

  @Test
  void insertThenReadAllFieldsAndAFieldSet() throws DBException {
    MongoDbClient c = client(Map.of());
    assertEquals(Status.OK, c.insert(TABLE, "user1", record("field0", "a", "field1", "b")));

    Map<String, ByteIterator> all = new HashMap<>();
    assertEquals(Status.OK, c.read(TABLE, "user1", null, all));
    assertEquals(Map.of("field0", "a", "field1", "b"), strings(all));

    Map<String, ByteIterator> one = new HashMap<>();
    assertEquals(Status.OK, c.read(TABLE, "user1", Set.of("field1"), one));
    assertEquals(Map.of("field1", "b"), strings(one));
  }

  @Test
  void warmupReadsBeforeTheMeasuredPhaseAndChangesNothing() throws DBException {
    MongoDbClient writer = client(Map.of());
    writer.insert(TABLE, "user5", record("field0", "a"));
    writer.insert(TABLE, "user7", record("field0", "b"));
    long before = System.nanoTime();
    MongoDbClient warmed = client(Map.of(ClientWarmup.SECONDS, "0.3"));
    // init() returned only after the warm-up: it is not part of the measured phase.
    assertTrue(System.nanoTime() - before >= 300_000_000L);
    Map<String, ByteIterator> got = new HashMap<>();
    assertEquals(Status.OK, warmed.read(TABLE, "user7", null, got));
    assertEquals(Map.of("field0", "b"), strings(got));
    try (MongoClient mc = MongoClients.create(uri)) {
      assertEquals(2, raw(mc).countDocuments());
    }
    // Without the property, no warm-up; a bad value is the binding's error, not a silent 0.
    assertEquals(0, ClientWarmup.micros(null));
    assertEquals(1_500_000, ClientWarmup.micros("1.5"));
    assertThrows(IllegalArgumentException.class, () -> ClientWarmup.micros("-1"));
  }

  @Test
  void theWarmUpReadsRealKeysByIdEqualityAsTheWorkloadDoes() {
    // Range reads (_id >= a random key) took another path in FerretDB on PostgreSQL (the whole
    // table read) and the measured reads after them sped up for seconds: NotSteady trials.
    List<BsonDocument> finds = new Vector<>();
    CommandListener listener =
        new CommandListener() {
          @Override
          public void commandStarted(CommandStartedEvent event) {
            if (event.getCommandName().equals("find")) {
              finds.add(event.getCommand().clone());
            }
          }
        };
    MongoClientSettings settings =
        MongoClientSettings.builder()
            .applyConnectionString(new ConnectionString(uri))
            .addCommandListener(listener)
            .build();
    try (MongoClient mc = MongoClients.create(settings)) {
      MongoCollection<Document> users = mc.getDatabase("ycsbtest").getCollection(TABLE);
      for (int i = 0; i < 5; i++) {
        users.insertOne(new Document("_id", "user" + i).append("field0", "x"));
      }
      long[] now = {0};
      long reads = ClientWarmup.run(users, 50, () -> now[0]++);
      assertTrue(reads > 10, "reads until the clock passed 50 us: " + reads);
      // One query for keys, then every read by _id equality on one of them.
      assertEquals(1 + reads, finds.size());
      assertTrue(finds.get(0).getDocument("filter", new BsonDocument()).isEmpty());
      Set<String> seen = new java.util.HashSet<>();
      for (BsonDocument find : finds.subList(1, finds.size())) {
        BsonValue id = find.getDocument("filter").get("_id");
        assertTrue(id != null && id.isString(), "an _id equality filter: " + find.toJson());
        seen.add(id.asString().getValue());
      }
      assertTrue(Set.of("user0", "user1", "user2", "user3", "user4").containsAll(seen));
      assertTrue(seen.size() > 1, "random keys among those taken: " + seen);
    }
  }

  @Test
  void readOfAMissingKeyIsNotFound() throws DBException {
    MongoDbClient c = client(Map.of());
    assertEquals(Status.NOT_FOUND, c.read(TABLE, "nope", null, new HashMap<>()));
  }

  @Test
  void updateSetsOnlyTheGivenFieldsAndMissingKeyIsNotFound() throws DBException {
    MongoDbClient c = client(Map.of());
    c.insert(TABLE, "user1", record("field0", "a", "field1", "b"));
    assertEquals(Status.OK, c.update(TABLE, "user1", record("field1", "B")));
    Map<String, ByteIterator> got = new HashMap<>();
    c.read(TABLE, "user1", null, got);
    assertEquals(Map.of("field0", "a", "field1", "B"), strings(got));
    assertEquals(Status.NOT_FOUND, c.update(TABLE, "nope", record("field1", "x")));
  }

  @Test
  void scanReturnsKeysInOrderFromTheStartKeyWithTheFieldSet() throws DBException {
    MongoDbClient c = client(Map.of());
    for (String k : List.of("user5", "user1", "user3", "user2", "user4")) {
      c.insert(TABLE, k, record("field0", k, "field1", "x"));
    }
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    assertEquals(Status.OK, c.scan(TABLE, "user2", 3, Set.of("field0"), rows));
    List<Map<String, String>> got = new ArrayList<>();
    rows.forEach(r -> got.add(strings(r)));
    assertEquals(
        List.of(Map.of("field0", "user2"), Map.of("field0", "user3"), Map.of("field0", "user4")),
        got);
    assertEquals(Status.NOT_FOUND, c.scan(TABLE, "zzz", 3, null, new Vector<>()));
  }

  @Test
  void deleteRemovesTheRecordAndMissingKeyIsNotFound() throws DBException {
    MongoDbClient c = client(Map.of());
    c.insert(TABLE, "user1", record("field0", "a"));
    assertEquals(Status.OK, c.delete(TABLE, "user1"));
    assertEquals(Status.NOT_FOUND, c.read(TABLE, "user1", null, new HashMap<>()));
    assertEquals(Status.NOT_FOUND, c.delete(TABLE, "user1"));
  }

  @Test
  void batchedInsertsAreWrittenPerBatchAndTheRestOnCleanup() throws DBException {
    MongoDbClient c = client(Map.of("batchsize", "3"));
    try (MongoClient mc = MongoClients.create(uri)) {
      assertEquals(Status.BATCHED_OK, c.insert(TABLE, "user1", record("f", "1")));
      assertEquals(Status.BATCHED_OK, c.insert(TABLE, "user2", record("f", "2")));
      assertEquals(0, raw(mc).countDocuments());
      assertEquals(Status.OK, c.insert(TABLE, "user3", record("f", "3")));
      assertEquals(3, raw(mc).countDocuments());
      assertEquals(Status.BATCHED_OK, c.insert(TABLE, "user4", record("f", "4")));
      assertEquals(3, raw(mc).countDocuments());
      open.remove(c);
      c.cleanup();
      assertEquals(4, raw(mc).countDocuments());
    }
  }

  @Test
  void aFailedBatchIsAnError() throws DBException {
    MongoDbClient c = client(Map.of("batchsize", "2"));
    c.insert(TABLE, "dup", record("f", "1"));
    assertEquals(Status.ERROR, c.insert(TABLE, "dup", record("f", "2")));
  }

  @Test
  void insertOfAnExistingKeyFailsUnlessUpsert() throws DBException {
    MongoDbClient plain = client(Map.of());
    assertEquals(Status.OK, plain.insert(TABLE, "user1", record("f", "1")));
    assertEquals(Status.ERROR, plain.insert(TABLE, "user1", record("f", "2")));
    open.remove(plain);
    plain.cleanup();

    MongoDbClient upsert = client(Map.of("mongodb.upsert", "true"));
    assertEquals(Status.OK, upsert.insert(TABLE, "user1", record("f", "3")));
    Map<String, ByteIterator> got = new HashMap<>();
    upsert.read(TABLE, "user1", null, got);
    assertEquals(Map.of("f", "3"), strings(got));
  }

  @Test
  void batchedUpsertReplacesExistingRecords() throws DBException {
    MongoDbClient c = client(Map.of("mongodb.upsert", "true", "batchsize", "2"));
    c.insert(TABLE, "user1", record("f", "1"));
    c.insert(TABLE, "user2", record("f", "2"));
    c.insert(TABLE, "user1", record("f", "new"));
    assertEquals(Status.OK, c.insert(TABLE, "user2", record("f", "new")));
    Map<String, ByteIterator> got = new HashMap<>();
    c.read(TABLE, "user1", null, got);
    assertEquals(Map.of("f", "new"), strings(got));
  }

  @Test
  void threadsShareOneClientClosedWithTheLastInstance() throws DBException {
    MongoDbClient a = client(Map.of());
    MongoDbClient b = client(Map.of());
    assertEquals(2, MongoDbClient.activeReferences());
    open.remove(a);
    a.cleanup();
    assertNotNull(MongoDbClient.activeConfig());
    assertEquals(Status.OK, b.insert(TABLE, "k", record("f", "1")));
    open.remove(b);
    b.cleanup();
    assertNull(MongoDbClient.activeConfig());
  }

  @Test
  void initAgainstADeadServerFailsWithAMarkedMessage() {
    server.shutdownNow();
    MongoDbClient c = new MongoDbClient();
    Properties p = new Properties();
    p.setProperty("mongodb.url", uri + "?serverSelectionTimeoutMS=300");
    c.setProperties(p);
    DBException e = assertThrows(DBException.class, c::init);
    assertTrue(e.getMessage().startsWith(MongoDbClient.ERROR_MARKER + " init failed"),
        e.getMessage());
    assertEquals(0, MongoDbClient.activeReferences());
    server = new MongoServer(new MemoryBackend()); // for @AfterEach
  }

  @Test
  void operationsAfterTheServerDiedAreErrorsNotExceptions() throws DBException {
    Properties p = new Properties();
    MongoDbClient c = new MongoDbClient();
    p.setProperty("mongodb.url", uri + "?serverSelectionTimeoutMS=300&connectTimeoutMS=300");
    c.setProperties(p);
    c.init();
    open.add(c);
    c.insert(TABLE, "user1", record("f", "1"));
    server.shutdownNow();
    assertEquals(Status.ERROR, c.read(TABLE, "user1", null, new HashMap<>()));
    assertEquals(Status.ERROR, c.update(TABLE, "user1", record("f", "2")));
    server = new MongoServer(new MemoryBackend());
  }
}
