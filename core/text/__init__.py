"""Text analysis shared by indexing, search, answers and extraction, one copy of each piece:
English function words and stemming (`english`), Chinese segmentation and function characters
(`chinese`), and the key entity names merge by (`entity_names`). Pure functions; jieba loads on first use.
"""
