"""Focused behaviours of the data-flow engine, each on a few lines of Java written here."""

from __future__ import annotations

from pathlib import Path

from zhixing.core.audit import audit_tree

HEAD = """
import javax.servlet.http.*;
import java.util.*;
"""


def _audit(
    tmp_path: Path, body: str, *, extra: str = "", weak_random: str = "flow"
) -> set[tuple[int, int]]:
    """Audit one class ``T`` whose ``handle`` method holds ``body``; return {(line, cwe)}."""
    src = HEAD + "public class T {\n  void handle(HttpServletRequest req, HttpServletResponse res)"
    src += " throws Exception {\n" + body + "\n  }\n" + extra + "\n}\n"
    (tmp_path / "T.java").write_text(src)
    result = audit_tree(tmp_path, weak_random=weak_random)
    lines = src.splitlines()
    out = set()
    for f in result.findings:
        assert f.code == lines[f.line - 1].strip()
        out.add((f.line - src[: src.index("throws Exception {")].count("\n") - 1, f.cwe))
    return out


def test_a_constant_condition_drops_the_dead_branch(tmp_path: Path) -> None:
    body = """
    String p = req.getParameter("p");
    int n = 86;
    String a = (7 * 42) - n > 200 ? "fixed" : p;
    String b = (7 * 42) - n < 200 ? "fixed" : p;
    res.getWriter().print(a);
    res.getWriter().print(b);"""
    assert _audit(tmp_path, body) == {(7, 79)}  # 294 - 86 = 208: only b keeps p


def test_a_switch_on_a_folded_char_takes_only_the_matching_case(tmp_path: Path) -> None:
    body = """
    String p = req.getParameter("p");
    String v;
    char c = "XYZ".charAt(1);
    switch (c) {
      case 'X': v = p; break;
      case 'Y': v = "const"; break;
      default: v = p;
    }
    Runtime.getRuntime().exec(v);"""
    assert _audit(tmp_path, body) == set()


def test_a_list_read_at_a_different_constant_index_is_clean(tmp_path: Path) -> None:
    body = """
    List<String> xs = new ArrayList<String>();
    xs.add("a");
    xs.add(req.getParameter("p"));
    xs.add("b");
    xs.remove(0);
    res.getWriter().print(xs.get(1));
    res.getWriter().print(xs.get(0));"""
    assert _audit(tmp_path, body) == {(8, 79)}


def test_a_map_read_with_another_constant_key_is_clean(tmp_path: Path) -> None:
    body = """
    Map<String, String> m = new HashMap<>();
    m.put("k1", req.getHeader("h"));
    m.put("k2", "const");
    req.getSession().setAttribute("x", m.get("k2"));
    req.getSession().setAttribute("y", m.get("k1"));"""
    assert _audit(tmp_path, body) == {(6, 501)}


def test_a_helper_returning_a_constant_breaks_the_flow(tmp_path: Path) -> None:
    body = """
    String p = req.getParameter("p");
    new java.io.File(same(p));
    new java.io.File(fixed(p));"""
    extra = """
  private static String same(String s) { StringBuilder b = new StringBuilder(); b.append(s); return b.toString(); }
  private static String fixed(String s) { return "const"; }"""
    assert _audit(tmp_path, body, extra=extra) == {(3, 22)}


def test_cookie_values_and_header_enumerations_are_sources(tmp_path: Path) -> None:
    body = """
    String v = "";
    for (Cookie c : req.getCookies()) { v = java.net.URLDecoder.decode(c.getValue(), "UTF-8"); }
    Enumeration<String> hs = req.getHeaders("h");
    String h = hs.nextElement();
    new ProcessBuilder(v).start();
    java.sql.Statement st = null;
    st.execute("DELETE FROM t WHERE k='" + h + "'");"""
    assert _audit(tmp_path, body) == {(6, 78), (8, 89)}


def test_numeric_conversion_and_html_encoding_sanitise(tmp_path: Path) -> None:
    body = """
    String p = req.getParameter("p");
    java.sql.Statement st = null;
    st.executeQuery("SELECT * FROM t WHERE id=" + Integer.parseInt(p));
    res.getWriter().print(org.apache.commons.text.StringEscapeUtils.escapeHtml4(p));
    st.executeQuery("SELECT * FROM t WHERE n='" + org.apache.commons.text.StringEscapeUtils.escapeHtml4(p) + "'");"""
    assert _audit(tmp_path, body) == {(6, 89)}


def test_weak_random_in_flow_mode_needs_a_sensitive_use(tmp_path: Path) -> None:
    body = """
    int shuffleSeed = new Random().nextInt();
    String token = Double.toString(Math.random());
    req.getSession().setAttribute("token", token);"""
    # A token made predictable is a weak secret (CWE-338) where it is made, in either mode.
    assert _audit(tmp_path, body) == {(3, 338), (4, 330)}
    # "any" reports where each predictable generator is made, used or not.
    assert _audit(tmp_path, body, weak_random="any") == {(2, 330), (3, 330), (3, 338)}


def test_a_weak_cipher_is_reported_but_a_bare_aes_is_not(tmp_path: Path) -> None:
    body = """
    javax.crypto.Cipher a = javax.crypto.Cipher.getInstance("AES");
    javax.crypto.Cipher b = javax.crypto.Cipher.getInstance("AES/CBC/PKCS5Padding");
    javax.crypto.KeyGenerator k = javax.crypto.KeyGenerator.getInstance("DESede");
    java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-512");"""
    # "AES" alone states no mode (the JDK would pick ECB): judged by what the code names.
    assert _audit(tmp_path, body) == {(4, 327)}


def test_a_configured_algorithm_is_judged_by_its_default(tmp_path: Path) -> None:
    body = """
    Properties cfg = load();
    String strong = cfg.getProperty("h1", "SHA-256");
    String weak = cfg.getProperty("h2", "MD5");
    String unknown = cfg.getProperty("h3");
    java.security.MessageDigest.getInstance(strong);
    java.security.MessageDigest.getInstance(weak);
    java.security.MessageDigest.getInstance(unknown);"""
    extra = "  private static Properties load() { return new Properties(); }"
    assert _audit(tmp_path, body, extra=extra) == {(7, 328)}


def test_an_interface_call_reaches_every_implementation(tmp_path: Path) -> None:
    (tmp_path / "Shaper.java").write_text(
        "interface Shaper { String shape(String s); }\n"
        "class Keep implements Shaper { public String shape(String s) { return s; } }\n"
        'class Drop implements Shaper { public String shape(String s) { return "x"; } }\n'
    )
    body = """
    Shaper sh = pick();
    res.getWriter().write(sh.shape(req.getParameter("p")));"""
    extra = "  private static Shaper pick() { return new Drop(); }"
    assert _audit(tmp_path, body, extra=extra) == {(3, 79)}


def test_a_field_holding_the_request_still_yields_request_data(tmp_path: Path) -> None:
    (tmp_path / "Wrap.java").write_text(
        "import javax.servlet.http.HttpServletRequest;\n"
        "class Wrap { private HttpServletRequest r; Wrap(HttpServletRequest r) { this.r = r; }\n"
        "  String get(String k) { return r.getParameter(k); } }\n"
    )
    body = """
    Wrap w = new Wrap(req);
    req.getSession().putValue("k", w.get("p"));"""
    assert _audit(tmp_path, body) == {(3, 501)}
