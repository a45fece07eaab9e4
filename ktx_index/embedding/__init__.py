"""The embedding model: the real MiniLM (ONNX Runtime, fine-tuned delta over the packaged base) and a deterministic fake behind one seam."""
