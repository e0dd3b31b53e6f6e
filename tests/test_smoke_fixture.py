from edgestats.store.results import Store


def test_results_db_fixture_holds_rows(results_db):
    with Store.open(results_db, read_only=True) as store:
        counts = store.counts()
    assert counts["runs"] == 4 and counts["latencies"] == 150 and counts["batches"] == 8
