import pytest

from core.search.fusion import RRF_K, reciprocal_rank_fusion


def test_rrf_uses_one_based_ranks_with_k_60():
    fused = reciprocal_rank_fusion({"basic": ["a", "b"]})
    assert RRF_K == 60
    assert fused[0].item == "a"
    assert fused[0].score == 1 / 61
    assert fused[1].score == 1 / 62


def test_rrf_prefers_hits_ranked_high_in_several_lists():
    fused = reciprocal_rank_fusion(
        {"basic": ["a", "b", "c"], "keyword": ["c", "b", "d"], "hyde": ["b"]}
    )
    assert [f.item for f in fused][:2] == ["b", "c"]
    b = fused[0]
    assert b.ranks == {"basic": 2, "keyword": 2, "hyde": 1}
    assert b.score == 1 / 62 + 1 / 62 + 1 / 61


def test_rrf_counts_an_item_once_per_list_at_its_best_rank():
    fused = reciprocal_rank_fusion({"basic": ["a", "a", "b"]})
    assert fused[0].ranks == {"basic": 1}
    assert fused[0].score == 1 / 61
    assert fused[1].ranks == {"basic": 3}


def test_rrf_breaks_ties_by_first_appearance():
    fused = reciprocal_rank_fusion({"basic": ["x", "y"], "keyword": ["y", "x"]})
    assert [f.item for f in fused] == ["x", "y"]
    assert fused[0].score == fused[1].score


def test_rrf_of_no_lists_is_empty():
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"basic": []}) == []


def test_expansions_vote_once_so_correlated_rewrites_cannot_outvote_the_direct_searches():
    from core.search.fusion import fuse_strategies

    # Four expansions agree on "x"; basic and keyword agree on "a".
    ranked = {
        "basic": ["a", "x"],
        "keyword": ["a", "y"],
        "hyde": ["x"],
        "split": ["x"],
        "generalize": ["x"],
        "graph": ["x", "a"],
    }
    flat = reciprocal_rank_fusion(ranked)
    assert flat[0].item == "x"  # flat RRF: the correlated rewrites win
    fused = fuse_strategies(ranked)
    assert fused[0].item == "a"
    assert fused[0].ranks == {"basic": 1, "keyword": 1, "graph": 2}  # provenance of every list
    # basic shares 1 of BM25's top 10 ("a"): weight 0.1 + 0.9 * 1/10; the expansions 0.3.
    assert fused[0].score == pytest.approx(0.19 / 61 + 1 / 61 + 0.3 / 62)


def test_the_dense_list_weighs_by_its_agreement_with_bm25():
    from core.search.fusion import dense_weight, fuse_strategies

    keyword = [f"k{i}" for i in range(10)]
    assert dense_weight(keyword, keyword) == pytest.approx(1.0)
    assert dense_weight([f"d{i}" for i in range(10)], keyword) == pytest.approx(0.1)
    assert dense_weight(["k0", "k1", *[f"d{i}" for i in range(8)]], keyword) == pytest.approx(0.28)
    # Sharing nothing, BM25's whole top 10 leads and dense's picks only follow.
    dense = [f"d{i}" for i in range(10)]
    fused = fuse_strategies({"basic": dense, "keyword": keyword})
    assert [f.item for f in fused] == keyword + dense


def test_a_document_the_question_names_votes_like_a_direct_search():
    from core.search.fusion import fuse_strategies

    ranked = {"basic": ["a", "b", "n"], "keyword": ["b", "a", "n"], "graph": ["n", "a"]}
    assert fuse_strategies(ranked)[0].item in ("a", "b")
    fused = fuse_strategies(ranked, named=["n"])
    assert fused[0].item == "n" and fused[0].ranks["graph"] == 1


def test_weighted_rrf_scales_each_list():
    fused = reciprocal_rank_fusion({"a": ["x"], "b": ["y"]}, weights={"a": 1.0, "b": 0.5})
    assert [f.item for f in fused] == ["x", "y"] and fused[1].score == 0.5 / 61
