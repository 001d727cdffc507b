package io.mongobench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The process side of the start barrier, with real threads and files (unit tier). */
class StartGateTest {
  @TempDir Path dir;

  @BeforeEach
  @AfterEach
  void fresh() {
    StartGate.reset();
    OperationClock.reset();
  }

  private Properties props(int threads, long timeoutMs) {
    Properties p = new Properties();
    p.setProperty(StartGate.READY, dir.resolve("ready").toString());
    p.setProperty(StartGate.START, dir.resolve("start").toString());
    p.setProperty(StartGate.TIMEOUT, Long.toString(timeoutMs));
    p.setProperty("threadcount", Integer.toString(threads));
    return p;
  }

  private List<Thread> arrive(Properties p, int n, ConcurrentLinkedQueue<Object> out) {
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  StartGate.await(p);
                  out.add(OperationClock.nowMicros());
                } catch (Exception e) {
                  out.add(e);
                }
              });
      t.start();
      threads.add(t);
    }
    return threads;
  }

  @Test
  void withoutTheFilesTheGateIsOpen() throws Exception {
    StartGate.await(new Properties());
  }

  @Test
  void readyOnlyWhenEveryThreadArrivedThenAllStartAtTheInstant() throws Exception {
    Properties p = props(3, 10_000);
    ConcurrentLinkedQueue<Object> out = new ConcurrentLinkedQueue<>();
    List<Thread> first = arrive(p, 2, out);
    Thread.sleep(200);
    assertFalse(Files.exists(dir.resolve("ready")), "ready before the third thread arrived");
    first.addAll(arrive(p, 1, out));
    long deadline = System.currentTimeMillis() + 5_000;
    while (!Files.exists(dir.resolve("ready")) && System.currentTimeMillis() < deadline) {
      Thread.sleep(5);
    }
    long readyUs = Long.parseLong(Files.readString(dir.resolve("ready")).trim());
    assertTrue(readyUs <= OperationClock.nowMicros());
    long startUs = OperationClock.nowMicros() + 300_000;
    StartGate.writeAtomically(dir.resolve("start"), Long.toString(startUs));
    for (Thread t : first) {
      t.join(5_000);
    }
    assertEquals(3, out.size());
    for (Object o : out) {
      assertTrue(o instanceof Long, "a thread failed: " + o);
      long at = (Long) o;
      assertTrue(at >= startUs, "started " + (startUs - at) + " us early");
      assertTrue(at - startUs < 100_000, "started " + (at - startUs) + " us late");
    }
  }

  @Test
  void anAbortFailsEveryThreadWithTheRunnersReason() throws Exception {
    Properties p = props(2, 10_000);
    ConcurrentLinkedQueue<Object> out = new ConcurrentLinkedQueue<>();
    List<Thread> threads = arrive(p, 2, out);
    StartGate.writeAtomically(dir.resolve("start"), "abort: clients [1] were not ready within 5 s");
    for (Thread t : threads) {
      t.join(5_000);
    }
    assertEquals(2, out.size());
    for (Object o : out) {
      assertTrue(o instanceof Exception);
      assertEquals(
          "start gate: clients [1] were not ready within 5 s", ((Exception) o).getMessage());
    }
  }

  @Test
  void noAnswerFromTheRunnerTimesOut() throws Exception {
    Properties p = props(1, 200);
    ConcurrentLinkedQueue<Object> out = new ConcurrentLinkedQueue<>();
    for (Thread t : arrive(p, 1, out)) {
      t.join(5_000);
    }
    Object o = out.poll();
    assertTrue(o instanceof Exception, "expected a timeout, got " + o);
    assertTrue(((Exception) o).getMessage().contains("no start instant"));
  }

  @Test
  void theClockReportsTheSpanOfEveryThreadsOperations() {
    OperationClock a = new OperationClock();
    OperationClock b = new OperationClock();
    a.record(1_000, 1_500);
    a.record(2_000, 2_600);
    b.record(1_200, 3_000);
    a.merge();
    b.merge();
    assertEquals(
        OperationClock.TIMING_MARKER + " {\"firstOpStartUs\": 1000, \"lastOpEndUs\": 3000}",
        OperationClock.report());
    OperationClock.reset();
    assertEquals(
        OperationClock.TIMING_MARKER + " {\"firstOpStartUs\": null, \"lastOpEndUs\": null}",
        OperationClock.report());
  }
}
