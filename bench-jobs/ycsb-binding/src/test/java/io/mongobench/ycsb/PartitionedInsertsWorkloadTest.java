package io.mongobench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;

/** Run-phase insert keys of parallel clients and successive runs (pure; YCSB's own generators). */
class PartitionedInsertsWorkloadTest {

  /** Records the keys CoreWorkload asks the database to insert and read. */
  static final class KeyRecorder extends DB {
    final List<String> inserted = new java.util.ArrayList<>();
    final Set<String> read = new HashSet<>();
    final List<String> reads = new java.util.ArrayList<>();

    @Override
    public Status read(String t, String key, Set<String> f, Map<String, ByteIterator> r) {
      read.add(key);
      reads.add(key);
      return Status.OK;
    }

    @Override
    public Status scan(String t, String start, int n, Set<String> f,
        java.util.Vector<HashMap<String, ByteIterator>> r) {
      return Status.OK;
    }

    @Override
    public Status update(String t, String key, Map<String, ByteIterator> v) {
      return Status.OK;
    }

    @Override
    public Status insert(String t, String key, Map<String, ByteIterator> v) {
      inserted.add(key);
      return Status.OK;
    }

    @Override
    public Status delete(String t, String key) {
      return Status.OK;
    }
  }

  private static PartitionedInsertsWorkload workload(Map<String, String> extra)
      throws WorkloadException {
    Properties p = new Properties();
    p.setProperty("recordcount", "100");
    p.setProperty("operationcount", "400");
    p.setProperty("readproportion", "0.5");
    p.setProperty("updateproportion", "0");
    p.setProperty("insertproportion", "0.5");
    p.setProperty("requestdistribution", "latest");
    p.setProperty("fieldcount", "1");
    p.setProperty("dotransactions", "true");
    p.putAll(extra);
    Measurements.setProperties(p); // CoreWorkload's constructor reads them, as in the Client
    PartitionedInsertsWorkload w = new PartitionedInsertsWorkload();
    w.init(p);
    return w;
  }

  private static KeyRecorder run(PartitionedInsertsWorkload w, int operations) throws Exception {
    KeyRecorder db = new KeyRecorder();
    Object state = w.initThread(new Properties(), 0, 1);
    for (int i = 0; i < operations; i++) {
      w.doTransaction(db, state);
    }
    return db;
  }

  /** The key names a plain load of records [0, 100) writes. */
  private static Set<String> loadedKeys() throws Exception {
    PartitionedInsertsWorkload w = workload(Map.of("dotransactions", "false"));
    KeyRecorder db = new KeyRecorder();
    Object state = w.initThread(new Properties(), 0, 1);
    for (int i = 0; i < 100; i++) {
      w.doInsert(db, state);
    }
    return new HashSet<>(db.inserted);
  }

  @Test
  void parallelClientsAndSuccessiveRunsInsertDisjointNewKeys() throws Exception {
    Set<String> loaded = loadedKeys();
    Set<String> all = new HashSet<>(loaded);
    int inserts = 0;
    for (String offset : List.of("0", "1099511627776")) { // two runs, as two plan steps
      for (int client = 0; client < 3; client++) {
        KeyRecorder db = run(workload(Map.of(
            "mongobench.client", String.valueOf(client),
            "mongobench.clients", "3",
            "mongobench.insertoffset", offset)), 400);
        assertTrue(db.inserted.size() > 100, "the mix inserts: " + db.inserted.size());
        for (String key : db.inserted) {
          assertTrue(all.add(key), "key inserted twice: " + key);
        }
        inserts += db.inserted.size();
        // Everything it reads was loaded or inserted by itself: never a missing key.
        Set<String> own = new HashSet<>(loaded);
        own.addAll(db.inserted);
        for (String key : db.read) {
          assertTrue(own.contains(key), "read a key nobody wrote for it: " + key);
        }
      }
    }
    assertEquals(100 + inserts, all.size());
  }

  @Test
  void plainCoreWorkloadClientsCollideWhichIsWhyThisClassExists() throws Exception {
    // Control: without the mapping, two clients insert the very same keys.
    KeyRecorder a = run(workload(Map.of()), 200);
    KeyRecorder b = run(workload(Map.of()), 200);
    Set<String> overlap = new HashSet<>(a.inserted);
    overlap.retainAll(b.inserted);
    assertTrue(overlap.size() > 50, "overlap " + overlap.size());
  }

  @Test
  void loadPhaseAndLoadedKeysAreUnchanged() throws Exception {
    PartitionedInsertsWorkload w = workload(Map.of("mongobench.client", "2",
        "mongobench.clients", "3", "mongobench.insertoffset", "1000"));
    assertEquals(99, w.physicalKey(99));
    assertEquals(100 + 1000 + 2, w.physicalKey(100));
    assertEquals(100 + 1000 + 3 + 2, w.physicalKey(101));
    PartitionedInsertsWorkload load = workload(Map.of("dotransactions", "false",
        "mongobench.client", "2", "mongobench.clients", "3"));
    assertEquals(150, load.physicalKey(150));
  }

  @Test
  void badPropertiesAreRefusedAtInit() {
    assertThrows(WorkloadException.class,
        () -> workload(Map.of("mongobench.client", "3", "mongobench.clients", "3")));
    assertThrows(WorkloadException.class, () -> workload(Map.of("mongobench.clients", "x")));
    assertThrows(WorkloadException.class,
        () -> workload(Map.of("mongobench.insertoffset", "-1")));
  }

  /** The same order as the runner's Locust driver (test_ycsbgen.JAVA_FIRST_OF_100). */
  @Test
  void permutationHoldsEveryKeyOnceSeededAndAsThePythonDriverHasIt() {
    long[] first = new long[8];
    Permutation hundred = new Permutation(100, 0);
    for (int i = 0; i < 8; i++) {
      first[i] = hundred.at(i);
    }
    org.junit.jupiter.api.Assertions.assertArrayEquals(
        new long[] {82, 7, 5, 27, 75, 50, 84, 26}, first);
    for (long n : new long[] {1, 2, 3, 100, 1000, 4097}) {
      Set<Long> seen = new HashSet<>();
      for (long i = 0; i < n; i++) {
        long k = new Permutation(n, 7).at(i);
        assertTrue(k >= 0 && k < n && seen.add(k), "n=" + n + " key " + k);
      }
    }
    Permutation a = new Permutation(1000, 7);
    Permutation b = new Permutation(1000, 8);
    int same = 0;
    for (int i = 0; i < 1000; i++) {
      same += a.at(i) == new Permutation(1000, 7).at(i) ? 1 : 0;
      assertEquals(a.at(i), a.at(i + 1000), "past the end it starts over");
    }
    assertEquals(1000, same);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
      differ += a.at(i) != b.at(i) ? 1 : 0;
    }
    assertTrue(differ > 900, "another seed, another order: " + differ);
  }

  /** Reads of every thread of 3 clients of 2 threads, as the runner and YCSB's Client split. */
  private static List<String> permutedReads(String seed, int clients, int threads)
      throws Exception {
    List<String> reads = new java.util.ArrayList<>();
    for (int c = 0; c < clients; c++) {
      long start = 100L * c / clients;
      long ops = 100L * (c + 1) / clients - start;
      PartitionedInsertsWorkload w = workload(Map.of(
          "readproportion", "1", "insertproportion", "0", "requestdistribution", "permutation",
          "operationcount", String.valueOf(ops), "mongobench.operationstart", String.valueOf(start),
          "mongobench.client", String.valueOf(c), "mongobench.clients", String.valueOf(clients),
          "mongobench.permutationseed", seed));
      for (int t = 0; t < threads; t++) {
        KeyRecorder db = new KeyRecorder();
        Object state = w.initThread(new Properties(), t, threads);
        long mine = ops / threads + (t < ops % threads ? 1 : 0);
        for (long i = 0; i < mine; i++) {
          assertTrue(w.doTransaction(db, state));
        }
        reads.addAll(db.reads);
      }
    }
    return reads;
  }

  @Test
  void permutationReadsEachLoadedKeyOnceOverClientsAndThreads() throws Exception {
    Set<String> loaded = loadedKeys();
    for (int[] shape : new int[][] {{1, 1}, {3, 2}, {7, 3}}) {
      List<String> reads = permutedReads("3", shape[0], shape[1]);
      assertEquals(100, reads.size());
      assertEquals(loaded, new HashSet<>(reads), "each loaded key, none twice");
      assertEquals(reads, permutedReads("3", 1, 1), "slices in order: the permutation itself");
    }
    assertTrue(!permutedReads("3", 3, 2).equals(permutedReads("4", 3, 2)), "seeded");
    // Not the load's order: a shuffled one.
    PartitionedInsertsWorkload w = workload(Map.of("readproportion", "1",
        "insertproportion", "0", "requestdistribution", "permutation", "operationcount", "100",
        "insertorder", "ordered"));
    KeyRecorder db = new KeyRecorder();
    Object state = w.initThread(new Properties(), 0, 1);
    for (int i = 0; i < 100; i++) {
      w.doTransaction(db, state);
    }
    List<String> sorted = new java.util.ArrayList<>(db.reads);
    sorted.sort(java.util.Comparator.comparingLong(k -> Long.parseLong(k.substring(4))));
    assertTrue(!sorted.equals(db.reads), "shuffled");
    assertEquals(100, new HashSet<>(db.reads).size());
  }

  @Test
  void permutationWithoutLoadedKeysIsRefusedAtInit() {
    assertThrows(WorkloadException.class, () -> workload(Map.of(
        "requestdistribution", "permutation", "insertcount", "0")));
  }
}
