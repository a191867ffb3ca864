"""Text encoders (hashing, all-MiniLM-L6-v2) with a content-hash cache: a bottom layer that dataset loaders,
retrieval and the scorers' features all use."""
