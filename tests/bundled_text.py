"""Text data for the tests that need a real, wide problem: the bundled SMS
spam collection through ``TfidfVectorizer``.  Shared by
``tests/test_defaults.py`` and ``tests/test_implicit_ftrl.py``."""
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import train_test_split

from sklearn_adaprox.datasets import load_sms_spam


def sms_tfidf():
    """``(X_train, y_train, X_test, y_test)``: 75/25 stratified split, tf-idf
    of words and bigrams (sublinear tf) fitted on the training messages,
    40,000 columns for 4,180 rows."""
    texts, labels = load_sms_spam()
    t_train, t_test, y_train, y_test = train_test_split(
        np.array(texts, dtype=object), labels, test_size=0.25, random_state=0,
        stratify=labels)
    tfidf = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    return tfidf.fit_transform(t_train), y_train, tfidf.transform(t_test), y_test
