package com.example.shop.controller;

import com.example.shop.model.Product;
import com.example.shop.service.ProductService;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.sql.SQLException;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.util.HtmlUtils;

@RestController
public class SearchController {

    private final ProductService productService;

    public SearchController(ProductService productService) {
        this.productService = productService;
    }

    @GetMapping("/search")
    public void search(@RequestParam("q") String q, HttpServletResponse response)
            throws IOException, SQLException {
        List<Product> results = productService.search(q);
        response.setContentType(MediaType.TEXT_HTML_VALUE);
        response.getWriter().write("<h1>Results for " + q + "</h1>");
        for (Product p : results) {
            response.getWriter().write("<li>" + HtmlUtils.htmlEscape(p.name()) + "</li>");
        }
    }

    @GetMapping(value = "/category", produces = MediaType.TEXT_HTML_VALUE)
    public String category(@RequestParam("name") String name) throws SQLException {
        List<Product> results = productService.byCategory(name);
        return "<h1>Category " + HtmlUtils.htmlEscape(name) + "</h1><p>" + results.size()
                + " products</p>";
    }
}
