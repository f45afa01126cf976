"""The audit's checks of secrets and weak crypto, each on a flawed snippet and its safe twin.

Every line that carries a marker comment is judged: ``VULN:<cwe>`` must be reported with that
CWE, ``SAFE:<cwe>`` must not be. Hard-coded credentials (CWE-798), weak ciphers (CWE-327),
predictable random secrets (CWE-338), secrets in cookies (CWE-315) and secrets sent in clear
text (CWE-319).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zhixing.core.audit import BUILTIN_RULES, AuditFinding, audit_tree
from zhixing.core.audit.credentials import PASSWORD, is_secret_value, name_kind

MARK = re.compile(r"(VULN|SAFE):(\d+)")
HEAD = """import java.io.*;
import java.math.BigInteger;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.security.*;
import java.sql.*;
import java.util.*;
import javax.crypto.*;
import javax.crypto.spec.*;
import javax.net.ssl.*;
import javax.servlet.http.*;
"""


def _judge(tmp_path: Path, body: str) -> dict[tuple[int, int], AuditFinding]:
    """Audit ``body`` (class members of ``T``) and check every marked line; return the
    findings by (line, CWE)."""
    src = HEAD + "public class T {\n" + body + "\n}\n"
    (tmp_path / "T.java").write_text(src)
    result = audit_tree(tmp_path)
    assert result.parse_errors == []
    found = {(f.line, f.cwe): f for f in result.findings}
    marked = 0
    for no, line in enumerate(src.splitlines(), 1):
        for kind, cwe in MARK.findall(line):
            marked += 1
            reported = (no, int(cwe)) in found
            assert reported == (kind == "VULN"), f"line {no}: {line.strip()}"
    assert marked >= 4
    return found


def test_a_literal_under_a_secrets_name_is_a_hard_coded_credential(tmp_path: Path) -> None:
    found = _judge(
        tmp_path,
        """
  private static final String DB_PASSWORD = "s3cr3t!"; // VULN:798
  private String apiKey = "AKIA4EXAMPLE7Q2Z"; // VULN:798
  private static final byte[] SECRET_KEY = {1, 2, 3, 4, 5, 6, 7, 8}; // VULN:798
  private char[] adminPwd = "letmein".toCharArray(); // VULN:798
  private String signingKey;
  private static final String PASSWORD_PARAM = "password"; // SAFE:798
  private static final String PASSWORD = "password"; // SAFE:798
  private static final String TOKEN_HEADER = "X-Auth-Token"; // SAFE:798
  private String token = "("; // SAFE:798
  private String dbPassword = System.getenv("DB_PASSWORD"); // SAFE:798
  private String passwordPrompt = "Enter your password:"; // SAFE:798
  void init(Properties props) {
    this.signingKey = "k3y-4-s1gning-2024"; // VULN:798
    String password = ""; // SAFE:798
    String mailPassword = "${MAIL_PASSWORD}"; // SAFE:798
    String jdbcPassword = "changeme"; // SAFE:798
    String ldapPassword = props.getProperty("ldap.password"); // SAFE:798
    props.put("db.password", "tiger"); // VULN:798
    props.setProperty("db.password", System.getenv("DB_PASSWORD")); // SAFE:798
    props.put("db.user", "scott"); // SAFE:798
  }""",
    )
    assert {f.confidence for (_, cwe), f in found.items() if cwe == 798} == {"medium"}
    assert any("password 'DB_PASSWORD'" in f.trace[-1].note for f in found.values())


def test_a_literal_passed_where_an_api_takes_a_password_or_key(tmp_path: Path) -> None:
    found = _judge(
        tmp_path,
        """
  private static final String FALLBACK = "tiger2024";
  Connection open(String url, String user, Properties props) throws Exception {
    DriverManager.getConnection(url, user, FALLBACK); // VULN:798
    DriverManager.getConnection(url, user, System.getenv("DB_PASSWORD")); // SAFE:798
    return DriverManager.getConnection(url, props); // SAFE:798
  }
  void auth(String user, Properties props, InputStream in) throws Exception {
    new PasswordAuthentication(user, "hunter2".toCharArray()); // VULN:798
    new PasswordAuthentication(user, System.console().readPassword()); // SAFE:798
    new SecretKeySpec("0123456789abcdef".getBytes(StandardCharsets.UTF_8), "AES"); // VULN:798
    byte[] stored = Base64.getDecoder().decode(System.getenv("AES_KEY"));
    new SecretKeySpec(stored, "AES"); // SAFE:798
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(in, "changeit".toCharArray()); // VULN:798
    ks.load(in, props.getProperty("keystore.password").toCharArray()); // SAFE:798
    char[] chars = "p4ssphrase".toCharArray();
    new PBEKeySpec(chars, new byte[16], 210000, 256); // VULN:798
    new PBEKeySpec(System.console().readPassword(), new byte[16], 210000, 256); // SAFE:798
  }
  void pool(org.apache.commons.dbcp2.BasicDataSource ds, Properties props) {
    ds.setPassword("tiger"); // VULN:798
    ds.setPassword(props.getProperty("db.password")); // SAFE:798
  }""",
    )
    api = [f for (_, cwe), f in found.items() if cwe == 798]
    assert api and {f.confidence for f in api} == {"high"}
    assert any("new SecretKeySpec" in f.trace[-1].note for f in api)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("dbPassword", PASSWORD),
        ("DB_PASSWD2", PASSWORD),
        ("clientSecret", "credential"),
        ("API_KEY", "credential"),
        ("accessToken", "credential"),
        ("privateKey", "key"),
        ("passwordField", None),
        ("publicKey", None),
        ("sessionKey", None),
        ("tokenizer", None),
    ],
)
def test_what_a_name_says_it_holds(name: str, kind: str | None) -> None:
    assert name_kind(name) == kind


def test_placeholders_and_names_are_not_secret_values() -> None:
    assert is_secret_value("Tr0ub4dor&3", PASSWORD)
    assert is_secret_value("password", PASSWORD, named=False)  # an API's argument: a password
    for value in ("", "  ", "***", "xxxx", "${DB_PASSWORD}", "<password>", "changeme", "TODO"):
        assert not is_secret_value(value, PASSWORD), value
    assert not is_secret_value("db.password", PASSWORD)
    assert not is_secret_value("enter-password", PASSWORD)
    assert is_secret_value("enterprise1", PASSWORD)
    # A token or API key looks like one: not a short word naming a field or a scheme.
    assert is_secret_value("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "credential")
    assert not is_secret_value("_csrf", "credential")
    assert not is_secret_value("Bearer", "credential")


def test_a_weak_cipher_or_a_stated_ecb_mode_is_reported_but_not_aes_alone(
    tmp_path: Path,
) -> None:
    _judge(
        tmp_path,
        """
  void ciphers() throws Exception {
    Cipher.getInstance("AES/ECB/PKCS5Padding"); // VULN:327
    Cipher.getInstance("DES/CBC/PKCS5Padding"); // VULN:327
    Cipher.getInstance("DESede/CBC/PKCS5Padding"); // VULN:327
    Cipher.getInstance("RC2"); // VULN:327
    Cipher.getInstance("ARCFOUR"); // VULN:327
    Cipher.getInstance("Blowfish/CBC/PKCS5Padding"); // VULN:327
    KeyGenerator.getInstance("DESede"); // VULN:327
    Cipher.getInstance("AES"); // SAFE:327
    Cipher.getInstance("AES/CBC/PKCS5Padding"); // SAFE:327
    Cipher.getInstance("AES/GCM/NoPadding"); // SAFE:327
    Cipher.getInstance("AES/CTR/NoPadding"); // SAFE:327
    Cipher.getInstance("RSA/ECB/OAEPWithSHA-256AndMGF1Padding"); // SAFE:327
    KeyGenerator.getInstance("AES"); // SAFE:327
  }""",
    )


def test_a_predictable_value_used_as_a_secret_is_reported(tmp_path: Path) -> None:
    found = _judge(
        tmp_path,
        """
  private static final String[] COLOURS = {"red", "green", "blue"};
  private String sessionId;
  void keys(List<String> cards, Account account) throws Exception {
    Random rnd = new Random();
    byte[] iv = new byte[16];
    rnd.nextBytes(iv);
    new IvParameterSpec(iv); // VULN:338
    byte[] raw = new byte[16];
    rnd.nextBytes(raw);
    new SecretKeySpec(raw, "AES"); // VULN:338
    byte[] nonce = new byte[12];
    new Random().nextBytes(nonce);
    new GCMParameterSpec(128, nonce); // VULN:338
    String resetToken = Long.toHexString(rnd.nextLong()); // VULN:338
    this.sessionId = Integer.toString((int) (Math.random() * 1000000)); // VULN:338
    account.setPassword(Long.toString(rnd.nextLong())); // VULN:338
    SecureRandom strong = new SecureRandom();
    byte[] iv2 = new byte[16];
    strong.nextBytes(iv2);
    new IvParameterSpec(iv2); // SAFE:338
    String apiToken = new BigInteger(130, strong).toString(32); // SAFE:338
    Collections.shuffle(cards, new Random()); // SAFE:338
    Thread.sleep(rnd.nextInt(1000)); // SAFE:338
    String colour = COLOURS[rnd.nextInt(COLOURS.length)]; // SAFE:338
    int jitter = (int) (Math.random() * 100); // SAFE:338
  }""",
    )
    f = next(f for (_, cwe), f in found.items() if cwe == 338)
    assert f.rule == "zhixing.weakrand.predictable-secret"
    assert f.trace[0].note == "predictable random value"


def test_a_secret_in_a_cookie_must_be_hashed_or_encrypted(tmp_path: Path) -> None:
    _judge(
        tmp_path,
        """
  void remember(HttpServletResponse res, String username, String password, Customer customer,
      MessageDigest md, Cipher cipher) throws Exception {
    res.addCookie(new Cookie("pw", password)); // VULN:315
    res.addCookie(new Cookie("ssn", customer.getSsn())); // VULN:315
    String b64 = Base64.getEncoder().encodeToString(password.getBytes());
    res.addCookie(new Cookie("b", b64)); // VULN:315
    char[] typed = System.console().readPassword();
    res.addCookie(new Cookie("t", new String(typed))); // VULN:315
    Cookie card = new Cookie("card", "");
    card.setValue(customer.getCreditCardNumber()); // VULN:315
    byte[] hash = md.digest(password.getBytes(StandardCharsets.UTF_8));
    res.addCookie(new Cookie("h", Base64.getEncoder().encodeToString(hash))); // SAFE:315
    byte[] sealed = cipher.doFinal(password.getBytes(StandardCharsets.UTF_8));
    res.addCookie(new Cookie("e", Base64.getEncoder().encodeToString(sealed))); // SAFE:315
    res.addCookie(new Cookie("user", username)); // SAFE:315
    res.addCookie(new Cookie("n", String.valueOf(password.length()))); // SAFE:315
  }""",
    )


def test_credentials_sent_over_a_plain_channel_are_reported(tmp_path: Path) -> None:
    _judge(
        tmp_path,
        """
  void send(String host, String user, String password, String pin) throws Exception {
    Socket plain = new Socket(host, 25);
    PrintWriter out = new PrintWriter(plain.getOutputStream(), true);
    out.println(password); // VULN:319
    out.println("HELO " + host); // SAFE:319
    SSLSocket tls = (SSLSocket) SSLSocketFactory.getDefault().createSocket(host, 465);
    PrintWriter safe = new PrintWriter(tls.getOutputStream(), true);
    safe.println(password); // SAFE:319
    new URL("http://api.example.com/login?user=" + user + "&password=" + password); // VULN:319
    new URL("http://bob:hunter2@files.example.com/report.csv"); // VULN:319
    new URL("http://www.example.com/index.html"); // SAFE:319
    new URL("https://api.example.com/login?password=" + password); // SAFE:319
    new URL("http://localhost:8080/login?password=" + password); // SAFE:319
    URL login = new URL("http://auth.example.com/login");
    HttpURLConnection conn = (HttpURLConnection) login.openConnection();
    OutputStream body = conn.getOutputStream();
    body.write(("user=" + user + "&password=" + pin).getBytes()); // VULN:319
    URL secure = new URL("https://auth.example.com/login");
    HttpsURLConnection sconn = (HttpsURLConnection) secure.openConnection();
    sconn.getOutputStream().write(("password=" + pin).getBytes()); // SAFE:319
  }""",
    )


def test_each_new_weakness_has_its_own_rule() -> None:
    rules = {r.cwe: r for r in BUILTIN_RULES}
    for cwe, rule in [
        (798, "zhixing.secrets.hardcoded-credential"),
        (338, "zhixing.weakrand.predictable-secret"),
        (315, "zhixing.cookie.cleartext-secret"),
        (319, "zhixing.transport.cleartext-credentials"),
    ]:
        assert rules[cwe].id == rule and rules[cwe].title and rules[cwe].description
