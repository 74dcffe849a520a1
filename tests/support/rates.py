"""Round-number rates of a made-up two-core machine, for checking plan's arithmetic by hand."""

from bitextmine.launch.costs import Rates

MEASURED = {"device": "cpu", "cores": 2, "embed_sentences_per_second": 100.0, "knn_gflops": 10.0, "dim": 512,
            "model_ram_gb": 0.5, "sample_lines": 400, "task_startup_seconds": 2.0, "model_load_seconds": 1.0,
            "task_base_ram_gb": 0.25, "knn_pairs_per_second": 1e8, "encode_vectors_per_second": 1e5,
            "scan_codes_per_second": 1e8, "probe_seconds": 1e-6, "rerank_per_second": 1e7,
            "knn_one_way_pairs_per_second": 1e8, "estimate_fit_seconds": 2.0,
            "read_rows_per_second": 1e5, "sample_rows_per_second": 1e5, "hash_bytes_per_second": 1e9,
            "text_lines_per_second": 1e5, "filter_pairs_per_second": 1.5e4,
            "filter_one_process_pairs_per_second": 1e4,
            "driver_startup_seconds": 0.5, "torch_import_seconds": 1.25, "torchless_task_startup_seconds": 0.75,
            "launch_seconds": 0.3, "submit_gap_seconds": 0.2, "torchless_task_base_ram_gb": 0.06,
            "filter_task_startup_seconds": 0.9, "filter_task_ram_gb": 0.16}
RATES = Rates(**MEASURED)
