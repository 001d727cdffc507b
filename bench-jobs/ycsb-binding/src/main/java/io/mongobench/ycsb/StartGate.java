package io.mongobench.ycsb;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import site.ycsb.DBException;

/**
 * The start barrier of a step's parallel clients, this process's side.
 *
 * <p>Every YCSB thread calls {@link #await} at the end of its {@code init()}, after the shared
 * client has connected. When the last thread of the process arrives, the gate writes the {@value
 * #READY} file (this process is ready, epoch microseconds). The runner, which knows every client
 * of the step, answers with the {@value #START} file: the common start instant (epoch
 * microseconds), or {@code abort: reason}. Every thread then sleeps until that instant, so the
 * step's clients begin their measured phase together. Without both properties the gate is open.
 *
 * <p>The same instant starts a duration-bounded phase's clock ({@link PhaseDeadline}): every
 * thread of every client ends it at this instant plus the duration, however long it took to get
 * here.
 */
final class StartGate {
  static final String READY = "mongobench.startgate.readyfile";
  static final String START = "mongobench.startgate.startfile";
  static final String TIMEOUT = "mongobench.startgate.timeoutms";
  static final long DEFAULT_TIMEOUT_MS = 600_000L;
  private static final long POLL_MS = 5;

  private static final Object LOCK = new Object();
  private static int arrived;
  private static Long startMicros; // read once, shared by every thread of the process
  private static String aborted;

  private StartGate() {}

  static void await(Properties props) throws DBException {
    String ready = props.getProperty(READY);
    String start = props.getProperty(START);
    if (ready == null || start == null) {
      return;
    }
    int threads = Integer.parseInt(props.getProperty("threadcount", "1").trim());
    long timeoutMs = Long.parseLong(props.getProperty(TIMEOUT, "" + DEFAULT_TIMEOUT_MS).trim());
    synchronized (LOCK) {
      arrived++;
      if (arrived == threads) {
        writeAtomically(Path.of(ready), Long.toString(OperationClock.nowMicros()));
      }
    }
    long at = startInstant(Path.of(start), System.nanoTime() + timeoutMs * 1_000_000L);
    long wait = at - OperationClock.nowMicros();
    if (wait > 0) {
      try {
        TimeUnit.MICROSECONDS.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DBException("interrupted at the start gate");
      }
    }
  }

  private static long startInstant(Path start, long deadlineNanos) throws DBException {
    while (true) {
      synchronized (LOCK) {
        if (aborted != null) {
          throw new DBException("start gate: " + aborted);
        }
        if (startMicros != null) {
          return startMicros;
        }
        if (Files.isRegularFile(start)) {
          String text = read(start).trim();
          if (text.startsWith("abort")) {
            aborted = text.substring("abort".length()).replaceFirst("^:\\s*", "");
            throw new DBException("start gate: " + aborted);
          }
          try {
            startMicros = Long.parseLong(text);
          } catch (NumberFormatException e) {
            aborted = "unreadable start instant '" + text + "'";
            throw new DBException("start gate: " + aborted);
          }
          return startMicros;
        }
      }
      if (System.nanoTime() > deadlineNanos) {
        throw new DBException("start gate: no start instant from the runner in time");
      }
      try {
        Thread.sleep(POLL_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DBException("interrupted at the start gate");
      }
    }
  }

  private static String read(Path path) throws DBException {
    try {
      return Files.readString(path, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new DBException("start gate: cannot read " + path + ": " + e.getMessage(), e);
    }
  }

  /** Written whole or not at all, as the runner writes the start file (tests use it too). */
  static void writeAtomically(Path path, String text) throws DBException {
    try {
      Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
      Files.writeString(tmp, text, StandardCharsets.UTF_8);
      Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new DBException("start gate: cannot write " + path + ": " + e.getMessage(), e);
    }
  }

  /** The step's common start instant (epoch microseconds) once the runner gave it; else empty. */
  static OptionalLong commonStart() {
    synchronized (LOCK) {
      return startMicros == null ? OptionalLong.empty() : OptionalLong.of(startMicros);
    }
  }

  /** For tests: a fresh gate. */
  static void reset() {
    synchronized (LOCK) {
      arrived = 0;
      startMicros = null;
      aborted = null;
    }
  }
}
