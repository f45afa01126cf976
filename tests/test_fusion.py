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
    assert fused[0].score == 1 / 61 + 1 / 61 + 0.5 / 62


def test_weighted_rrf_scales_each_list():
    fused = reciprocal_rank_fusion({"a": ["x"], "b": ["y"]}, weights={"a": 1.0, "b": 0.5})
    assert [f.item for f in fused] == ["x", "y"] and fused[1].score == 0.5 / 61
