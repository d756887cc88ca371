"""The failure drill (`warrant drill`): a world of real processes, the cases of DRILL.md, the judge."""
