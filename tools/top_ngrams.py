"""Show the most frequent n-grams of each order of a dataset, straight from its Parquet files."""

import sys

import duckdb


def main(dataset: str, per_order: int = 5) -> None:
    print(duckdb.sql(f"""
        SELECT "order", ngram, match_count, volume_count, first_year, last_year
        FROM read_parquet('{dataset}/ngrams/*/*.parquet')
        QUALIFY row_number() OVER (PARTITION BY "order" ORDER BY match_count DESC, ngram) <= {per_order}
        ORDER BY "order", match_count DESC, ngram
    """))


if __name__ == "__main__":
    main(sys.argv[1])
