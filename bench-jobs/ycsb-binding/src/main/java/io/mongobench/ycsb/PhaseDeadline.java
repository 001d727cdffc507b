package io.mongobench.ycsb;

import java.util.OptionalLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The end of one YCSB thread's duration-bounded run phase: {@value #DURATION} seconds after its
 * operations start.
 *
 * <p>YCSB 0.17's {@code maxexecutiontime} starts its timer when the client threads start, so each
 * thread's {@code init()} (connecting, the TLS handshake, the start gate) is spent from the step's
 * duration: a slow start measures a shorter window than the step says, or none at all. Here the
 * phase starts at the step's common start instant when the clients meet at the start gate (every
 * thread of every client then ends at the same instant), else at the thread's first operation.
 * The deadline is fixed at the thread's first check, after {@code init()} has returned; checking
 * is one clock read per operation, and none when no duration is set.
 */
final class PhaseDeadline {
  /** The measured phase's length in seconds (the runner sets it from maxexecutiontime). */
  static final String DURATION = "mongobench.durationseconds";

  private static final long UNSET = Long.MIN_VALUE;

  private final long durationMicros;
  private final LongSupplier nowMicros;
  private final Supplier<OptionalLong> commonStartMicros;
  private long deadlineMicros = UNSET;

  /**
   * @param durationMicros the phase's length; 0 or less: no deadline (bounded by count only)
   * @param nowMicros the clock, epoch microseconds (the start gate's instant is one too)
   * @param commonStartMicros the step's common start instant, empty when there is no start gate
   */
  PhaseDeadline(
      long durationMicros, LongSupplier nowMicros, Supplier<OptionalLong> commonStartMicros) {
    this.durationMicros = durationMicros;
    this.nowMicros = nowMicros;
    this.commonStartMicros = commonStartMicros;
  }

  /** True once this thread's phase is over: it must not start another operation. */
  boolean passed() {
    if (durationMicros <= 0) {
      return false;
    }
    long now = nowMicros.getAsLong();
    if (deadlineMicros == UNSET) {
      deadlineMicros = commonStartMicros.get().orElse(now) + durationMicros;
    }
    return now >= deadlineMicros;
  }

  /** The instant this thread's phase ends (epoch microseconds); empty before its first check. */
  OptionalLong deadline() {
    return deadlineMicros == UNSET ? OptionalLong.empty() : OptionalLong.of(deadlineMicros);
  }

  /** {@value #DURATION} in microseconds, 0 when absent; whole or fractional seconds. */
  static long durationMicros(String value) {
    if (value == null || value.isBlank()) {
      return 0;
    }
    double seconds = Double.parseDouble(value.trim());
    if (!(seconds >= 0) || Double.isInfinite(seconds)) {
      throw new NumberFormatException("not a duration in seconds: " + value);
    }
    return Math.round(seconds * 1_000_000d);
  }
}
