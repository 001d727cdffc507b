package io.mongobench.ycsb;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoCredential;
import com.mongodb.ReadPreference;
import com.mongodb.WriteConcern;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The binding's configuration, parsed from YCSB properties (pure: no I/O except reading a CA
 * file).
 *
 * <table>
 *   <caption>Properties</caption>
 *   <tr><td>mongodb.url</td><td>connection string (default mongodb://localhost:27017/ycsb);
 *       auth, TLS and any driver option may be given here</td></tr>
 *   <tr><td>mongodb.database</td><td>database (default: the URI's, else ycsb)</td></tr>
 *   <tr><td>mongodb.username, mongodb.password, mongodb.authSource,
 *       mongodb.authMechanism</td><td>credentials overriding the URI's; the password may
 *       instead come from the environment variable named by mongodb.passwordEnv</td></tr>
 *   <tr><td>mongodb.tls</td><td>true/false (overrides the URI)</td></tr>
 *   <tr><td>mongodb.tlsCAFile</td><td>PEM file with the CA certificate(s) to trust</td></tr>
 *   <tr><td>mongodb.tlsAllowInvalidHostnames</td><td>true to skip host name checks</td></tr>
 *   <tr><td>mongodb.writeConcern</td><td>acknowledged|unacknowledged|journaled|majority|w1|w2|w3
 *       or a number of members</td></tr>
 *   <tr><td>mongodb.journal, mongodb.wtimeoutMs</td><td>refine the write concern</td></tr>
 *   <tr><td>mongodb.readPreference</td><td>primary|primaryPreferred|secondary|
 *       secondaryPreferred|nearest</td></tr>
 *   <tr><td>mongodb.upsert</td><td>insert with replaceOne(upsert) instead of insertOne</td></tr>
 *   <tr><td>batchsize (alias mongodb.batchsize)</td><td>inserts per insertMany (default 1)</td></tr>
 * </table>
 */
public record BindingConfig(
    ConnectionString uri,
    String database,
    WriteConcern writeConcern,
    ReadPreference readPreference,
    boolean upsert,
    int batchSize,
    MongoClientSettings clientSettings) {

  public static final String DEFAULT_URL = "mongodb://localhost:27017/ycsb";

  /** Parses the properties; {@code env} is consulted only for mongodb.passwordEnv. */
  public static BindingConfig from(Properties p, Map<String, String> env) {
    String url = p.getProperty("mongodb.url", p.getProperty("mongodb.uri", DEFAULT_URL));
    ConnectionString cs;
    try {
      cs = new ConnectionString(url);
    } catch (IllegalArgumentException e) {
      // never echo the URI: it may carry a password
      throw new IllegalArgumentException("mongodb.url is not a valid connection string: "
          + e.getMessage().replace(url, "<uri>"), e);
    }
    String database = p.getProperty("mongodb.database");
    if (database == null || database.isBlank()) {
      database = cs.getDatabase() != null ? cs.getDatabase() : "ycsb";
    }

    WriteConcern wc = parseWriteConcern(p.getProperty("mongodb.writeConcern"));
    String journal = p.getProperty("mongodb.journal");
    if (journal != null) {
      wc = (wc != null ? wc : cs.getWriteConcern() != null ? cs.getWriteConcern()
          : WriteConcern.ACKNOWLEDGED).withJournal(parseBoolean("mongodb.journal", journal));
    }
    String wtimeout = p.getProperty("mongodb.wtimeoutMs");
    if (wtimeout != null) {
      wc = (wc != null ? wc : cs.getWriteConcern() != null ? cs.getWriteConcern()
          : WriteConcern.ACKNOWLEDGED)
          .withWTimeout(parsePositiveInt("mongodb.wtimeoutMs", wtimeout, 0), TimeUnit.MILLISECONDS);
    }
    ReadPreference rp = parseReadPreference(p.getProperty("mongodb.readPreference"));
    boolean upsert = parseBoolean("mongodb.upsert", p.getProperty("mongodb.upsert", "false"));
    int batchSize = parsePositiveInt("batchsize",
        p.getProperty("batchsize", p.getProperty("mongodb.batchsize", "1")), 1);

    MongoClientSettings.Builder b = MongoClientSettings.builder().applyConnectionString(cs);
    if (wc != null) {
      b.writeConcern(wc);
    }
    if (rp != null) {
      b.readPreference(rp);
    }
    MongoCredential cred = credential(p, env, cs);
    if (cred != null) {
      b.credential(cred);
    }
    String tls = p.getProperty("mongodb.tls");
    String caFile = p.getProperty("mongodb.tlsCAFile");
    String invalidHosts = p.getProperty("mongodb.tlsAllowInvalidHostnames");
    if (tls != null || caFile != null || invalidHosts != null) {
      boolean enabled = tls != null ? parseBoolean("mongodb.tls", tls)
          : caFile != null || Boolean.TRUE.equals(cs.getSslEnabled());
      boolean allowInvalid = invalidHosts != null
          ? parseBoolean("mongodb.tlsAllowInvalidHostnames", invalidHosts)
          : Boolean.TRUE.equals(cs.getSslInvalidHostnameAllowed());
      SSLContext ctx = caFile != null ? sslContextTrusting(Path.of(caFile)) : null;
      b.applyToSslSettings(s -> {
        s.enabled(enabled).invalidHostNameAllowed(allowInvalid);
        if (ctx != null) {
          s.context(ctx);
        }
      });
    }
    return new BindingConfig(cs, database, wc, rp, upsert, batchSize, b.build());
  }

  static MongoCredential credential(Properties p, Map<String, String> env, ConnectionString cs) {
    String user = p.getProperty("mongodb.username");
    String password = p.getProperty("mongodb.password");
    String passwordEnv = p.getProperty("mongodb.passwordEnv");
    if (password == null && passwordEnv != null) {
      password = env.get(passwordEnv);
      if (password == null) {
        throw new IllegalArgumentException(
            "mongodb.passwordEnv names " + passwordEnv + ", which is not set");
      }
    }
    if (user == null && password == null) {
      return null; // the URI's credentials, if any, apply
    }
    if (user == null) {
      user = cs.getUsername();
    }
    if (user == null) {
      throw new IllegalArgumentException("a MongoDB password was given without mongodb.username");
    }
    String source = p.getProperty("mongodb.authSource");
    if (source == null) {
      source = cs.getCredential() != null ? cs.getCredential().getSource() : "admin";
    }
    char[] pw = password != null ? password.toCharArray()
        : cs.getPassword() != null ? cs.getPassword() : new char[0];
    String mechanism = p.getProperty("mongodb.authMechanism", "").toUpperCase(Locale.ROOT);
    return switch (mechanism) {
      case "" -> MongoCredential.createCredential(user, source, pw);
      case "SCRAM-SHA-256" -> MongoCredential.createScramSha256Credential(user, source, pw);
      case "SCRAM-SHA-1" -> MongoCredential.createScramSha1Credential(user, source, pw);
      case "PLAIN" -> MongoCredential.createPlainCredential(user, source, pw);
      default -> throw new IllegalArgumentException(
          "mongodb.authMechanism: unsupported " + mechanism
              + " (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN)");
    };
  }

  static WriteConcern parseWriteConcern(String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    String v = value.trim();
    if (v.chars().allMatch(Character::isDigit)) {
      return new WriteConcern(Integer.parseInt(v));
    }
    WriteConcern wc = WriteConcern.valueOf(v);
    if (wc == null) {
      throw new IllegalArgumentException("mongodb.writeConcern: unknown value '" + v
          + "' (acknowledged, unacknowledged, journaled, majority, w1, w2, w3 or a number)");
    }
    return wc;
  }

  static ReadPreference parseReadPreference(String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    try {
      return ReadPreference.valueOf(value.trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("mongodb.readPreference: unknown value '" + value
          + "' (primary, primaryPreferred, secondary, secondaryPreferred, nearest)", e);
    }
  }

  static boolean parseBoolean(String name, String value) {
    String v = value.trim().toLowerCase(Locale.ROOT);
    if (v.equals("true") || v.equals("false")) {
      return v.equals("true");
    }
    throw new IllegalArgumentException(name + ": expected true or false, got '" + value + "'");
  }

  static int parsePositiveInt(String name, String value, int min) {
    try {
      int n = Integer.parseInt(value.trim());
      if (n >= min) {
        return n;
      }
    } catch (NumberFormatException e) {
      // fall through to the message below
    }
    throw new IllegalArgumentException(name + ": expected an integer >= " + min + ", got '"
        + value + "'");
  }

  static SSLContext sslContextTrusting(Path pem) {
    try (InputStream in = Files.newInputStream(pem)) {
      Collection<? extends Certificate> certs =
          CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (certs.isEmpty()) {
        throw new IllegalArgumentException("mongodb.tlsCAFile " + pem + " holds no certificate");
      }
      KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
      ks.load(null, null);
      int i = 0;
      for (Certificate c : certs) {
        ks.setCertificateEntry("ca-" + i++, c);
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("mongodb.tlsCAFile " + pem + ": " + e.getMessage(), e);
    }
  }
}
