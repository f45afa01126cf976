package com.example.shop.util;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public final class TokenUtil {

    private static final String SECRET_KEY = "shop-2024-hmac-7f3a9c1e5b2d";

    private static final String REFRESH_KEY_ENV = "SHOP_REFRESH_KEY";

    private TokenUtil() {
    }

    public static String sign(String username) throws GeneralSecurityException {
        return hmac(SECRET_KEY, username);
    }

    public static String signRefresh(String username) throws GeneralSecurityException {
        String refreshKey = System.getenv(REFRESH_KEY_ENV);
        if (refreshKey == null || refreshKey.isBlank()) {
            throw new IllegalStateException(REFRESH_KEY_ENV + " is not set");
        }
        return hmac(refreshKey, username);
    }

    private static String hmac(String key, String data) throws GeneralSecurityException {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        byte[] digest = mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
        return data + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
    }
}
