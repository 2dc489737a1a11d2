"""Command-line options for METEOR (`dialeval score --meteor-resources PATH`)."""

from __future__ import annotations


def add_score_arguments(parser) -> None:
    parser.add_argument(
        "--meteor-resources", dest="meteor_resources", metavar="PATH", default=None,
        help="folder holding METEOR 1.5's meteor-1.5.jar and data/paraphrase-en.gz "
             "(default: $DIALEVAL_METEOR_RESOURCES, else the installed pycocoevalcap)")
    parser.add_argument(
        "--meteor-workers", dest="meteor_workers", metavar="N", type=int, default=None,
        help="processes that align METEOR pairs (default: 2 where the machine has 2 cores "
             "and the set has at least 5,000 pairs, else 1)")
