package io.mongobench.ycsb;

/**
 * A seeded shuffled order of the key numbers [0, n): {@link #at(long)} is its i-th (i wraps at n).
 *
 * <p>A keyed bijection, not a table, so a client of a billion records holds none: a balanced
 * Feistel network of {@value #ROUNDS} rounds (SplitMix64 as the round function) on the smallest
 * even number of bits that covers n, cycle-walked back into [0, n). The runner's Locust driver
 * (mongobench_runner.ycsbgen.Permutation) computes the same order bit for bit, so both drivers
 * read the keys in one order.
 */
final class Permutation {
  static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;
  static final int ROUNDS = 4;

  private final long n;
  private final int half;
  private final long mask;
  private final long[] keys = new long[ROUNDS];

  Permutation(long n, long seed) {
    if (n < 1) {
      throw new IllegalArgumentException("a permutation of " + n + " keys: there must be one");
    }
    int bits = Math.max(2, 64 - Long.numberOfLeadingZeros(n - 1));
    bits += bits % 2;
    this.n = n;
    this.half = bits / 2;
    this.mask = (1L << half) - 1;
    for (int r = 0; r < ROUNDS; r++) {
      keys[r] = splitmix64(seed + r * GOLDEN_GAMMA);
    }
  }

  static long splitmix64(long value) {
    long z = value + GOLDEN_GAMMA;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private long feistel(long x) {
    long left = x >>> half;
    long right = x & mask;
    for (long key : keys) {
      long next = left ^ (splitmix64(right ^ key) & mask);
      left = right;
      right = next;
    }
    return (left << half) | right;
  }

  /** The key number at position {@code i} (0-based; past n it starts over). */
  long at(long i) {
    long x = feistel(Math.floorMod(i, n));
    while (x >= n) { // cycle walking: a bijection of [0, 2^bits) restricted to [0, n)
      x = feistel(x);
    }
    return x;
  }

  /** One thread's part: positions start, start + stride, ... */
  static final class Walk {
    private final Permutation permutation;
    private long position;
    private final long stride;

    Walk(Permutation permutation, long start, long stride) {
      this.permutation = permutation;
      this.position = start;
      this.stride = stride;
    }

    long next() {
      long keynum = permutation.at(position);
      position += stride;
      return keynum;
    }
  }
}
