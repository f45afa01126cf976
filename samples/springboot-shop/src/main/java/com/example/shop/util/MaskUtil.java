package com.example.shop.util;

public final class MaskUtil {

    private MaskUtil() {
    }

    /** Replaces every character of a secret with '*', so logs show only its length. */
    public static String mask(String secret) {
        if (secret == null) {
            return "null";
        }
        return "*".repeat(secret.length());
    }
}
