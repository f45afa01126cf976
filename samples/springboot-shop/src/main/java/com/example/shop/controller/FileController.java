package com.example.shop.controller;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class FileController {

    private final String uploadDir;

    public FileController(@Value("${shop.upload-dir}") String uploadDir) {
        this.uploadDir = uploadDir;
    }

    @GetMapping("/files/download")
    public ResponseEntity<byte[]> download(@RequestParam("filename") String filename)
            throws IOException {
        File file = new File(uploadDir, filename);
        return ResponseEntity.ok(Files.readAllBytes(file.toPath()));
    }

    @GetMapping("/files/preview")
    public ResponseEntity<byte[]> preview(@RequestParam("filename") String filename)
            throws IOException {
        Path base = Paths.get(uploadDir).toAbsolutePath().normalize();
        Path target = base.resolve(filename).normalize();
        if (!target.startsWith(base)) {
            return ResponseEntity.badRequest().build();
        }
        return ResponseEntity.ok(Files.readAllBytes(target));
    }
}
