package com.example.shop.controller;

import com.example.shop.service.UserService;
import com.example.shop.util.TokenUtil;
import java.security.GeneralSecurityException;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class UserController {

    private final UserService users;

    public UserController(UserService users) {
        this.users = users;
    }

    @PostMapping("/login")
    public ResponseEntity<String> login(@RequestParam("username") String username,
                                        @RequestParam("password") String password)
            throws GeneralSecurityException {
        if (!users.login(username, password)) {
            return ResponseEntity.status(401).body("invalid credentials");
        }
        return ResponseEntity.ok(TokenUtil.sign(username));
    }

    @PostMapping("/register")
    public ResponseEntity<Void> register(@RequestParam("username") String username,
                                         @RequestParam("password") String password) {
        users.register(username, password);
        return ResponseEntity.ok().build();
    }
}
