package io.mongobench.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.MongoCredential;
import com.mongodb.ReadPreference;
import com.mongodb.WriteConcern;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** How YCSB properties become driver settings (pure; no server). */
class BindingConfigTest {

  private static BindingConfig parse(Map<String, String> props) {
    return parse(props, Map.of());
  }

  private static BindingConfig parse(Map<String, String> props, Map<String, String> env) {
    Properties p = new Properties();
    p.putAll(props);
    return BindingConfig.from(p, env);
  }

  @Test
  void defaultsFollowTheUri() {
    BindingConfig c = parse(Map.of("mongodb.url",
        "mongodb://u:p%40ss@db.example:27018/bench?authSource=admin&w=majority"
            + "&readPreference=secondary&tls=true"));
    assertEquals("bench", c.database());
    assertNull(c.writeConcern());
    assertEquals(WriteConcern.MAJORITY, c.clientSettings().getWriteConcern());
    assertEquals(ReadPreference.secondary(), c.clientSettings().getReadPreference());
    assertTrue(c.clientSettings().getSslSettings().isEnabled());
    MongoCredential cred = c.clientSettings().getCredential();
    assertEquals("u", cred.getUserName());
    assertArrayEquals("p@ss".toCharArray(), cred.getPassword());
    assertEquals("admin", cred.getSource());
    assertFalse(c.upsert());
    assertEquals(1, c.batchSize());
  }

  @Test
  void databaseDefaultsToYcsbWithoutOneInTheUri() {
    assertEquals("ycsb", parse(Map.of("mongodb.url", "mongodb://h:1/")).database());
    assertEquals("other",
        parse(Map.of("mongodb.url", "mongodb://h:1/x", "mongodb.database", "other")).database());
  }

  @Test
  void writeConcernAndReadPreferencePropertiesOverrideTheUri() {
    BindingConfig c = parse(Map.of(
        "mongodb.url", "mongodb://h:1/db?w=1&readPreference=primary",
        "mongodb.writeConcern", "majority",
        "mongodb.journal", "true",
        "mongodb.wtimeoutMs", "2500",
        "mongodb.readPreference", "secondaryPreferred"));
    WriteConcern wc = c.clientSettings().getWriteConcern();
    assertEquals("majority", wc.getWString());
    assertEquals(Boolean.TRUE, wc.getJournal());
    assertEquals(2500, wc.getWTimeout(TimeUnit.MILLISECONDS));
    assertEquals(ReadPreference.secondaryPreferred(), c.clientSettings().getReadPreference());
  }

  @Test
  void writeConcernNamesAndNumbers() {
    assertEquals(WriteConcern.UNACKNOWLEDGED, BindingConfig.parseWriteConcern("unacknowledged"));
    assertEquals(WriteConcern.JOURNALED, BindingConfig.parseWriteConcern("JOURNALED"));
    assertEquals(WriteConcern.W2, BindingConfig.parseWriteConcern("w2"));
    assertEquals(new WriteConcern(3), BindingConfig.parseWriteConcern("3"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> BindingConfig.parseWriteConcern("safe-ish"));
    assertTrue(e.getMessage().contains("mongodb.writeConcern"), e.getMessage());
  }

  @Test
  void unknownReadPreferenceIsAClearError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> parse(Map.of("mongodb.readPreference", "closest")));
    assertTrue(e.getMessage().contains("mongodb.readPreference"), e.getMessage());
  }

  @Test
  void credentialsFromPropertiesAndThePasswordFromTheEnvironment() {
    BindingConfig c = parse(Map.of(
        "mongodb.url", "mongodb://h:1/db",
        "mongodb.username", "bench",
        "mongodb.passwordEnv", "MONGO_PW",
        "mongodb.authSource", "ycsb",
        "mongodb.authMechanism", "scram-sha-256"), Map.of("MONGO_PW", "s3cret"));
    MongoCredential cred = c.clientSettings().getCredential();
    assertEquals("bench", cred.getUserName());
    assertArrayEquals("s3cret".toCharArray(), cred.getPassword());
    assertEquals("ycsb", cred.getSource());
    assertEquals(MongoCredential.SCRAM_SHA_256_MECHANISM, cred.getMechanism());

    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(
        Map.of("mongodb.username", "bench", "mongodb.passwordEnv", "MISSING")));
    assertTrue(e.getMessage().contains("MISSING"), e.getMessage());
  }

  @Test
  void anInvalidUriDoesNotLeakThePassword() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> parse(Map.of("mongodb.url", "mongodb://u:topsecret@h:notaport/db")));
    assertFalse(e.getMessage().contains("topsecret"), e.getMessage());
  }

  @Test
  void tlsWithACaFileAndRelaxedHostnames() throws URISyntaxException {
    String ca = Path.of(getClass().getResource("/test-ca.pem").toURI()).toString();
    BindingConfig c = parse(Map.of(
        "mongodb.url", "mongodb://h:1/db",
        "mongodb.tlsCAFile", ca,
        "mongodb.tlsAllowInvalidHostnames", "true"));
    var ssl = c.clientSettings().getSslSettings();
    assertTrue(ssl.isEnabled());
    assertTrue(ssl.isInvalidHostNameAllowed());
    assertNotNull(ssl.getContext());

    assertFalse(parse(Map.of("mongodb.url", "mongodb://h:1/db?tls=true", "mongodb.tls", "false"))
        .clientSettings().getSslSettings().isEnabled());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> parse(Map.of("mongodb.tlsCAFile", "/does/not/exist.pem")));
    assertTrue(e.getMessage().contains("mongodb.tlsCAFile"), e.getMessage());
  }

  @Test
  void batchSizeAndUpsert() {
    BindingConfig c = parse(Map.of("batchsize", "100", "mongodb.upsert", "true"));
    assertEquals(100, c.batchSize());
    assertTrue(c.upsert());
    assertThrows(IllegalArgumentException.class, () -> parse(Map.of("batchsize", "0")));
    assertThrows(IllegalArgumentException.class, () -> parse(Map.of("mongodb.upsert", "yes")));
  }
}
