package com.example.shop.service;

import com.example.shop.model.Product;
import com.example.shop.repository.ProductRepository;
import java.sql.SQLException;
import java.util.List;
import org.springframework.stereotype.Service;

@Service
public class ProductService {

    private final ProductRepository products;

    public ProductService(ProductRepository products) {
        this.products = products;
    }

    public List<Product> search(String keyword) throws SQLException {
        return products.searchByName(keyword);
    }

    public List<Product> byCategory(String category) throws SQLException {
        return products.findByCategory(category);
    }

    public void removeCategory(String category) throws SQLException {
        products.deleteByCategory(category);
    }
}
