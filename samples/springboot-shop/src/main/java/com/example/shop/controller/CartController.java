package com.example.shop.controller;

import com.example.shop.model.Cart;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.util.Base64;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.CookieValue;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class CartController {

    private final ObjectMapper objectMapper = new ObjectMapper();

    @PostMapping("/cart/restore")
    public Cart restore(@CookieValue("cart") String cookie)
            throws IOException, ClassNotFoundException {
        byte[] data = Base64.getDecoder().decode(cookie);
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(data))) {
            return (Cart) in.readObject();
        }
    }

    @PostMapping(value = "/cart/import", consumes = MediaType.APPLICATION_JSON_VALUE)
    public Cart importCart(@RequestBody String json) throws IOException {
        return objectMapper.readValue(json, Cart.class);
    }
}
