package com.example.shop.service;

import com.example.shop.util.MaskUtil;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.stereotype.Service;

@Service
public class UserService {

    private static final Logger log = LoggerFactory.getLogger(UserService.class);

    private final BCryptPasswordEncoder encoder = new BCryptPasswordEncoder();
    private final Map<String, String> passwordHashes = new ConcurrentHashMap<>();

    public boolean login(String username, String password) {
        log.info("Login attempt: username=" + username + ", password=" + password);
        String hash = passwordHashes.get(username);
        return hash != null && encoder.matches(password, hash);
    }

    public void register(String username, String password) {
        log.info("Registering user: username={}, password={}", username, MaskUtil.mask(password));
        passwordHashes.put(username, encoder.encode(password));
    }
}
